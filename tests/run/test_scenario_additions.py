"""What `starquake run` added to the scenario format: the topic workload, its subscription
mode and drain settings, the session timeout, the resolved `scenario.toml`, and the
workloads that do not exist yet refused by name."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from scenarios.format import ScenarioError, load_scenario, scenario_toml
from tests.run.conftest import WriteScenario

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def test_topic_workload_defaults(write_scenario: WriteScenario) -> None:
    scenario = write_scenario('[workload]\nkind = "topic"\n')
    assert scenario.workload.knobs.subscription_mode == "failover"
    assert scenario.workload.drain_quiet_s == 3.0
    assert scenario.topology.session_timeout_ms == 4000


@pytest.mark.parametrize(("text", "message"), [
    ('[workload]\nsubscription_mode = "broadcast"\n',
     "workload.subscription_mode: expected one of exclusive, failover, shared, key_shared, "
     "got 'broadcast'"),
    ("[topology]\nsession_timeout_ms = 0\n",
     "topology.session_timeout_ms: expected a number of at least 1, got 0"),
    ('[workload]\ndrain_quiet_s = "soon"\n', "workload.drain_quiet_s: expected a number"),
    ("[checkers]\nunavailable_bound_ms = 0\n",
     "checkers.unavailable_bound_ms: expected a number of at least 1, got 0"),
    ("[checkers]\nstalled_subscription_bound_ms = 0\n",
     "checkers.stalled_subscription_bound_ms: expected a number of at least 1, got 0"),
])
def test_bad_values_are_named(write_scenario: WriteScenario, text: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        write_scenario(text)


@pytest.mark.parametrize("kind", ["topic", "scalable"])
def test_the_single_cluster_workloads_need_one_cluster(write_scenario: WriteScenario,
                                                        kind: str) -> None:
    with pytest.raises(ScenarioError,
                       match=f"topology.clusters: the {kind} workload runs on one"):
        write_scenario(f'[topology]\nclusters = ["a", "b"]\n[workload]\nkind = "{kind}"\n')


def test_the_resolved_scenario_reads_back_the_same(tmp_path: Path) -> None:
    for path in sorted([*REPO.glob("scenarios/*/*.toml"), *HERE.glob("scenarios/*.toml")]):
        scenario = dataclasses.replace(load_scenario(path), seed=1234)
        written = tmp_path / "scenario.toml"
        written.write_text(scenario_toml(scenario))
        assert dataclasses.replace(load_scenario(written), path=path) == scenario


def test_a_timeline_survives_the_round_trip(write_scenario: WriteScenario, tmp_path: Path) -> None:
    scenario = write_scenario('[nemesis]\nschedule = "timeline"\n[[nemesis.timeline]]\n'
                              'at_s = 3\nfault = "kill"\ntargets = ["owner"]\n'
                              '[[nemesis.timeline]]\nat_s = 5\nfault = "pause"\nduration_s = 2\n')
    written = tmp_path / "resolved.toml"
    written.write_text(scenario_toml(scenario))
    assert load_scenario(written).nemesis == scenario.nemesis
