"""The pure parts of the geo-replication workloads: when the consumers fail over, and the
topologies the multi-cluster workloads refuse before anything starts."""

from __future__ import annotations

import pytest

from harness.workloads.geo import failover_plan
from scenarios.format import ScenarioError
from scenarios.plan import schedule_for
from tests.run.conftest import WriteScenario


def test_failovers_cycle_through_the_clusters_evenly_spaced() -> None:
    assert failover_plan(["a", "b", "c"], 24.0, 6.0) == [
        (4.8, "a", "b"), (9.6, "b", "c"), (14.4, "c", "a"), (19.2, "a", "b")]
    assert failover_plan(["a", "b"], 21.0, 10.0) == [(7.0, "a", "b"), (14.0, "b", "a")]


def test_a_short_run_still_fails_over_once() -> None:
    assert failover_plan(["a", "b"], 2.0, 6.0) == [(1.0, "a", "b")]


def test_the_failover_interval_must_be_positive(write_scenario: WriteScenario) -> None:
    with pytest.raises(ScenarioError, match=r"workload.failover_every_s"):
        write_scenario('[topology]\nclusters = ["a", "b"]\n'
                       '[workload]\nkind = "geo"\nfailover_every_s = 0\n')


@pytest.mark.parametrize("kind", ["geo", "migration"])
def test_the_multi_cluster_workloads_need_two_clusters(write_scenario: WriteScenario,
                                                       kind: str) -> None:
    with pytest.raises(ScenarioError, match=f"topology.clusters: the {kind} workload needs "
                                            r"at least two clusters, got \['a'\]"):
        write_scenario(f'[workload]\nkind = "{kind}"\n')


def test_a_wan_cut_needs_two_clusters(write_scenario: WriteScenario) -> None:
    scenario = write_scenario('[nemesis]\nschedule = "random"\nfaults = ["cut-wan"]\n')
    with pytest.raises(ScenarioError, match=r"nemesis.faults.0.: cut-wan cuts clusters apart"):
        schedule_for(scenario, 1)


@pytest.mark.parametrize("setting", ["replication_keepalive_s", "snapshot_timeout_s"])
def test_the_replication_timers_are_topology_settings(write_scenario: WriteScenario,
                                                      setting: str) -> None:
    scenario = write_scenario(f'[topology]\nclusters = ["a", "b"]\n{setting} = 2\n'
                              '[workload]\nkind = "geo"\n')
    assert getattr(scenario.topology, setting) == 2.0
    with pytest.raises(ScenarioError, match=f"topology.{setting}"):
        write_scenario(f'[topology]\nclusters = ["a", "b"]\n{setting} = 0\n'
                       '[workload]\nkind = "geo"\n')
