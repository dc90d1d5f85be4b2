"""Scenarios drawn for a system starquake did not start (scenarios/offer.py): every draw
stays within what the target offers (its clusters and nodes, the faults its node controls
allow, the workloads whose features it offers), reads back as a scenario file whose faults
plan on the target's nodes, and comes from the distributions every explore run draws from."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from harness.target import Capability, Node, Role, TargetCluster
from harness.targets.external.file import FEATURES, Feature
from harness.topology import REFERENCE_BROKER_SETTINGS, Topology
from harness.workloads.shared_knobs import deduplicates
from nemesis.faults import FAULTS
from scenarios.draw import (
    HEALTH_SLACK_S,
    KINDS,
    draw_scenario,
    fault_lengths,
    liveness_bound_ms,
)
from scenarios.format import Scenario, load_scenario, scenario_toml
from scenarios.offer import (
    DRAWN_FOR,
    KIND_NEEDS,
    Offer,
    draw_for_offer,
    without_deduplication,
)
from scenarios.plan import schedule_for

SEEDS = range(1, 81)
HOOKS: frozenset[Capability] = frozenset({"kill", "pause"})
DOCKER: frozenset[Capability] = frozenset({"kill", "pause", "partition", "cut-clients"})
PARTITIONS = {name for name, fault in FAULTS.items()
              if fault.needs & {"partition", "cut-clients"}}


def _cluster(name: str, brokers: int, capabilities: frozenset[Capability] = frozenset(),
             bookies: int = 1, zookeepers: int = 0) -> TargetCluster:
    roles: list[tuple[Role, int]] = [("zookeeper", zookeepers), ("bookie", bookies),
                                     ("broker", brokers)]
    nodes = tuple(Node(f"{name}-{role}{n}", role, name, f"10.0.0.{n}", capabilities)
                  for role, count in roles for n in range(1, count + 1))
    return TargetCluster(name, tuple(f"pulsar://{name}-b{n}:6650" for n in range(brokers)),
                         tuple(f"http://{name}-b{n}:8080" for n in range(brokers)), None, nodes)


def _offer(*clusters: TargetCluster, features: tuple[Feature, ...] = ("persistent",),
           session_timeout_s: float = 30.0, shutdown_s: float | None = None) -> Offer:
    return Offer(clusters, session_timeout_s, shutdown_s, frozenset(features))


def _drawn(offer: Offer, tmp_path: Path) -> list[tuple[int, Scenario]]:
    """Every seed's scenario for `offer`, written and read back, planned on its nodes."""
    found = []
    for seed in SEEDS:
        path = tmp_path / f"explore-{seed}.toml"
        path.write_text(scenario_toml(draw_for_offer(seed, offer)))
        scenario = load_scenario(path)
        schedule_for(scenario, seed, nodes=offer.nodes)  # raises when a fault is beyond them
        found.append((seed, scenario))
    return found


def test_every_drawn_workload_says_what_it_needs() -> None:
    assert set(KIND_NEEDS) == set(KINDS)
    assert all(set(needs) <= set(FEATURES) for needs in KIND_NEEDS.values())


def test_one_cluster_without_controls_gets_no_fault_and_no_second_cluster(
        tmp_path: Path) -> None:
    offer = _offer(_cluster("standalone", brokers=2), session_timeout_s=12.0)
    assert offer.kinds == ("topic", "contract")
    for seed, scenario in _drawn(offer, tmp_path):
        assert scenario.workload.kind in ("topic", "contract"), seed
        assert scenario.nemesis.schedule == "none" and scenario.nemesis.faults == ()
        topology = scenario.topology
        assert topology.clusters == ("standalone",)
        assert (topology.brokers, topology.bookies, topology.zookeepers) == (2, 1, 1)
        assert topology.session_timeout_ms == 12_000
        assert scenario.checkers.unavailable_bound_ms == liveness_bound_ms(scenario.nemesis,
                                                                           topology)
        assert scenario.checkers.zombie_broker_bound_ms is None  # it declares no shutdown
        assert scenario.mutants == () and scenario.expected == "valid"


def test_hook_controls_without_partition_get_process_faults_only(tmp_path: Path) -> None:
    offer = _offer(_cluster("a", brokers=3, capabilities=HOOKS, bookies=2, zookeepers=1),
                   features=("persistent", "scalable"))
    drawn = _drawn(offer, tmp_path)
    faults = {fault for _, scenario in drawn for fault in scenario.nemesis.faults}
    assert faults and not faults & PARTITIONS
    assert all(FAULTS[fault].needs <= HOOKS | {"controller"} for fault in faults)
    assert {scenario.workload.kind for _, scenario in drawn} == {"topic", "contract",
                                                                 "scalable"}
    assert {(s.topology.brokers, s.topology.bookies) for _, s in drawn} == {(3, 2)}


def test_two_clusters_with_geo_features_draw_geo_on_both_and_partitions(
        tmp_path: Path) -> None:
    offer = _offer(_cluster("east", 2, DOCKER, zookeepers=1),
                   _cluster("west", 2, DOCKER, zookeepers=1),
                   features=("persistent", "geo-replication", "replicated-subscriptions"))
    drawn = _drawn(offer, tmp_path)
    kinds = {scenario.workload.kind for _, scenario in drawn}
    assert kinds == {"topic", "contract", "geo"}  # no scalable topics, no lookup service
    for _, scenario in drawn:
        several = scenario.workload.kind == "geo"
        assert scenario.topology.clusters == (("east", "west") if several else ("east",))
    assert {fault for _, s in drawn for fault in s.nemesis.faults} & PARTITIONS


def test_no_fault_is_drawn_that_some_seed_would_aim_at_a_node_that_cannot_take_it(
        tmp_path: Path) -> None:
    """Brokers controlled, bookies not, ZooKeeper not listed: a partition's picks include
    bookies and ZooKeeper, a kill's the brokers only."""
    brokers = _cluster("a", 2, DOCKER)
    bookie = Node("a-bookie1", "bookie", "a", "10.0.1.1")
    offer = _offer(TargetCluster("a", brokers.service_urls, brokers.admin_urls, None,
                                 (*brokers.of_role("broker"), bookie)))
    faults = {fault for _, s in _drawn(offer, tmp_path) for fault in s.nemesis.faults}
    assert "kill" in faults
    assert all(not {"bookie", "zookeeper"} & set(FAULTS[fault].defaults) for fault in faults)


def test_the_zombie_bound_is_held_only_where_a_shutdown_is_declared_and_never_under_it(
        ) -> None:
    silent = _offer(_cluster("a", 1, HOOKS))
    declared = _offer(_cluster("a", 1, HOOKS), shutdown_s=90.0)
    bounds = [draw_for_offer(seed, declared).checkers.zombie_broker_bound_ms for seed in SEEDS]
    assert {draw_for_offer(seed, silent).checkers.zombie_broker_bound_ms
            for seed in SEEDS} == {None}
    floor = round(1000 * (90.0 + HEALTH_SLACK_S))
    held = [b for b in bounds if b is not None]
    assert None in bounds and floor in held and min(held) == floor


@pytest.mark.parametrize("seed", [1, 2, 3, 7, 11])
def test_a_target_offering_everything_draws_what_our_containers_draw(seed: int) -> None:
    """The distributions are draw_scenario's: the workload and its knobs (the broker's
    deduplication aside), the run's length, the faults and their timing are those the seed
    draws for our containers, when the target's nodes take what theirs take; the faults'
    lengths alone follow the target's own session timeout (draw.fault_lengths)."""
    ours_too: frozenset[Capability] = DOCKER | {"session-debug"}
    offer = _offer(_cluster("a", 3, ours_too, zookeepers=1),
                   _cluster("b", 3, ours_too, zookeepers=1),
                   features=("persistent", "scalable", "geo-replication",
                             "replicated-subscriptions", "migration"))
    ours, theirs = draw_scenario(seed, DRAWN_FOR), draw_for_offer(seed, offer)
    assert theirs.workload == without_deduplication(ours.workload)
    assert theirs.duration_s == ours.duration_s
    assert replace(theirs.nemesis, duration_s=0, lengths_s=()) == replace(
        ours.nemesis, duration_s=0, lengths_s=())
    bands = fault_lengths(theirs.topology, theirs.faults_s)
    assert any(low <= theirs.nemesis.duration_s <= high for low, high in bands)
    assert len(theirs.nemesis.lengths_s) == len(ours.nemesis.lengths_s)
    assert all(low <= length <= high for length, (low, high)
               in zip(theirs.nemesis.lengths_s, bands, strict=False))


def test_a_target_s_draws_never_switch_deduplication_on_where_our_own_do(
        tmp_path: Path) -> None:
    """No probe tells whether a system deduplicates: a target's scenario leaves it off,
    though the same seeds drawn for our containers switch it on in some topic runs."""
    offer = _offer(_cluster("a", 3, DOCKER))
    ours = [draw_scenario(seed, DRAWN_FOR) for seed in SEEDS]
    assert any(deduplicates(s.workload.knobs) for s in ours)
    assert not any(deduplicates(s.workload.knobs) for _, s in _drawn(offer, tmp_path))


def test_a_target_s_draws_name_none_of_the_settings_only_our_brokers_read() -> None:
    """Its brokers are not ours: the scenario file keeps their defaults, though the same
    geo seeds drawn for our containers set the keep-alive and the snapshot timeout."""
    offer = _offer(_cluster("a", 1, DOCKER), _cluster("b", 1, DOCKER),
                   features=("persistent", "geo-replication", "replicated-subscriptions"))
    default = Topology()
    ours = [draw_scenario(seed, DRAWN_FOR, kinds=("geo",)).topology for seed in SEEDS]
    assert any(t.snapshot_timeout_s != default.snapshot_timeout_s for t in ours)
    for seed in SEEDS:
        theirs = draw_for_offer(seed, offer).topology
        assert all(getattr(theirs, name) == getattr(default, name)
                   for name in REFERENCE_BROKER_SETTINGS)
