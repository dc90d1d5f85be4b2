"""A random schedule's `overlap`, `roles`, `aim_clusters`, `nodes_at_once`, `lengths_s`,
`background` and `quiet_end_s`: two faults at once, faults aimed past a fault's own
defaults, faults in any cluster and on several nodes at once, faults of several lengths in
one schedule, one long fault beneath the others, a load that goes on after the faults,
without moving the schedules written before these existed."""

from __future__ import annotations

import dataclasses
from itertools import pairwise

import pytest

from harness.target import Node
from nemesis.faults.base import FaultPlanError, Surface
from nemesis.schedule import FaultStep, NemesisSettings, build_schedule

NODES = Surface((
    Node("a-broker1", "broker", "a", "h", frozenset({"kill", "pause", "session-debug"})),
    Node("a-broker2", "broker", "a", "h", frozenset({"kill", "pause", "session-debug"})),
    Node("a-bookie1", "bookie", "a", "h", frozenset({"kill", "pause"})),
    Node("a-zk1", "zookeeper", "a", "h", frozenset()),
))
SEEDS = range(1, 41)


def _steps(seed: int, **settings: object) -> tuple[FaultStep, ...]:
    nemesis = NemesisSettings("random", faults=("kill", "pause", "expire-session"),
                              interval_s=4.0, duration_s=6.0, **settings)  # type: ignore[arg-type]
    return build_schedule(nemesis, NODES, seed, 120.0, "t.toml").steps


def _overlapping(steps: tuple[FaultStep, ...]) -> list[tuple[FaultStep, FaultStep]]:
    return [(a, b) for a, b in pairwise(steps) if b.at_s < a.at_s + a.duration_s]


def test_without_overlap_or_roles_faults_come_one_after_another_at_their_defaults() -> None:
    for seed in SEEDS:
        steps = _steps(seed)
        assert not _overlapping(steps)
        assert {t for s in steps for t in s.targets} <= {"owner", "a-broker1", "a-broker2"}


def test_overlap_begins_some_faults_inside_the_one_before_and_never_a_third() -> None:
    pairs = 0
    for seed in SEEDS:
        steps = _steps(seed, overlap=0.5)
        for i, (a, b) in enumerate(pairwise(steps)):
            if b.at_s < a.at_s + a.duration_s:
                pairs += 1
                assert all(c.at_s >= max(a.at_s + a.duration_s, b.at_s + b.duration_s)
                           for c in steps[i + 2:])
    assert pairs


def test_roles_aim_kills_and_pauses_at_a_bookie_and_an_expiry_never() -> None:
    steps = [s for seed in SEEDS for s in _steps(seed, roles=("bookie", "zookeeper"))]
    hit = {(s.fault, t) for s in steps for t in s.targets}
    assert ("kill", "a-bookie1") in hit and ("pause", "a-bookie1") in hit
    assert not {t for f, t in hit if f == "expire-session"} - {"owner", "a-broker1",
                                                                  "a-broker2"}
    assert "a-zk1" not in {t for _, t in hit}  # no node of it can be killed or paused


def test_roles_aim_faults_at_the_owner_at_the_controller_leader_only_where_there_is_one() -> None:
    def hit(surface: Surface) -> set[tuple[str, str]]:
        nemesis = NemesisSettings("random", faults=("kill", "pause", "expire-session"),
                                  interval_s=4.0, duration_s=6.0, roles=("controller-leader",))
        return {(s.fault, t) for seed in SEEDS
                for s in build_schedule(nemesis, surface, seed, 120.0, "t.toml").steps
                for t in s.targets}

    with_controller = hit(dataclasses.replace(NODES, controller=True))
    assert {f for f, t in with_controller if t == "controller-leader"} == {
        "kill", "pause", "expire-session"}
    assert "controller-leader" not in {t for _, t in hit(NODES)}


def test_a_fault_begun_inside_one_of_its_kind_is_aimed_elsewhere_and_of_another_may_not_be(
        ) -> None:
    pairs = [(a, b) for seed in SEEDS for a, b in _overlapping(_steps(seed, overlap=1.0))]
    assert all(a.targets != b.targets for a, b in pairs if b.targets and a.fault == b.fault)
    same_node = {(a.fault, b.fault) for a, b in pairs if a.targets == b.targets}
    assert ("pause", "kill") in same_node  # a frozen broker killed, as a supervisor would


TWO_CLUSTERS = Surface(tuple(
    dataclasses.replace(n, name=c + n.name[1:], cluster=c,
                        capabilities=n.capabilities | {"partition"})
    for c in "ab" for n in NODES.nodes))


def _hit(aim_clusters: str, faults: tuple[str, ...]) -> set[tuple[str, tuple[str, ...]]]:
    nemesis = NemesisSettings("random", faults=faults, interval_s=4.0, duration_s=6.0,
                              roles=("bookie",), aim_clusters=aim_clusters)
    return {(s.fault, s.targets) for seed in SEEDS
            for s in build_schedule(nemesis, TWO_CLUSTERS, seed, 120.0, "t.toml").steps}


def test_faults_land_in_the_first_cluster_unless_any_cluster_is_asked() -> None:
    first = _hit("first", ("kill", "pause", "cut-wan"))
    assert {t[0] for f, t in first if f != "cut-wan"} <= {"owner", "a-broker1", "a-broker2",
                                                         "a-bookie1"}
    assert {t for f, t in first if f == "cut-wan"} == {()}
    anywhere = _hit("any", ("kill", "pause", "cut-wan", "unlink-replication"))
    assert {"b-broker1", "b-broker2", "b-bookie1"} <= {t[0] for f, t in anywhere
                                                        if f in ("kill", "pause")}
    for fault in ("cut-wan", "unlink-replication"):  # a pair, either way round, or all
        assert {t for f, t in anywhere if f == fault} == {(), ("a", "b"), ("b", "a")}


def test_any_cluster_on_one_cluster_draws_as_the_first() -> None:
    nemesis = NemesisSettings("random", faults=("kill", "pause"), interval_s=4.0,
                              duration_s=6.0)
    for seed in SEEDS:
        assert build_schedule(nemesis, NODES, seed, 120.0, "t.toml") == build_schedule(
            dataclasses.replace(nemesis, aim_clusters="any"), NODES, seed, 120.0, "t.toml")


def test_nodes_at_once_strikes_several_distinct_nodes_in_one_cluster() -> None:
    steps = [s for seed in SEEDS for s in _steps(seed, roles=("bookie",), nodes_at_once=3)]
    assert all(len(set(s.targets)) == len(s.targets) for s in steps)
    hit = {s.targets for s in steps if s.fault in ("kill", "pause")}
    assert any(len(t) == 3 for t in hit)
    assert any({"a-bookie1", "owner"} <= set(t) for t in hit)  # storage and its writer
    assert max(len(s.targets) for s in steps if s.fault == "expire-session") > 1
    assert all("a-bookie1" not in s.targets for s in steps if s.fault == "expire-session")
    anywhere = _hit_at_once(("kill", "cut-wan"))
    kills = [targets for f, targets in anywhere if f == "kill"]
    assert all(len({t[0] for t in targets if t != "owner"}) <= 1 for targets in kills)
    assert {t[0] for targets in kills for t in targets if t != "owner"} == {"a", "b"}
    assert any(len(targets) > 1 for targets in kills)
    assert all(len(targets) in (0, 2) for f, targets in anywhere if f == "cut-wan")


def _hit_at_once(faults: tuple[str, ...]) -> set[tuple[str, tuple[str, ...]]]:
    nemesis = NemesisSettings("random", faults=faults, interval_s=4.0, duration_s=6.0,
                              roles=("bookie",), aim_clusters="any", nodes_at_once=2)
    return {(s.fault, s.targets) for seed in SEEDS
            for s in build_schedule(nemesis, TWO_CLUSTERS, seed, 120.0, "t.toml").steps}


def test_one_node_at_once_draws_as_before() -> None:
    for seed in SEEDS:
        assert _steps(seed, roles=("bookie",)) == _steps(seed, roles=("bookie",),
                                                          nodes_at_once=1)


def test_lengths_give_each_fault_one_of_several_lengths() -> None:
    lengths = [s.duration_s for seed in SEEDS  # about 1, 6 (duration_s) or 20 s
               for s in _steps(seed, lengths_s=(1.0, 20.0)) if s.fault != "expire-session"]
    assert {round(length) // 10 for length in lengths} >= {0, 1, 2}
    assert all(0.5 <= length <= 1.5 or 3.0 <= length <= 9.0 or 10.0 <= length <= 30.0
               for length in lengths)
    assert any(length <= 1.5 for length in lengths) and any(length >= 10 for length in lengths)


def test_one_length_draws_as_before() -> None:
    for seed in SEEDS:
        assert _steps(seed) == _steps(seed, lengths_s=())


def _background(steps: tuple[FaultStep, ...], settings: NemesisSettings) -> FaultStep:
    (found,) = [s for s in steps if (s.at_s, s.fault, s.duration_s) == (
        settings.background_at_s, settings.background, settings.background_s)]
    return found


def test_a_background_fault_lies_beneath_the_faults_drawn_as_without_it() -> None:
    settings = NemesisSettings("random", faults=("kill", "pause", "expire-session"),
                               interval_s=4.0, duration_s=6.0, background="kill",
                               background_at_s=5.0, background_s=60.0)
    inside = 0
    for seed in SEEDS:
        steps = build_schedule(settings, NODES, seed, 120.0, "t.toml").steps
        background = _background(steps, settings)
        assert background.beneath and len(background.targets) == 1
        assert [s.at_s for s in steps] == sorted(s.at_s for s in steps)
        others = [s for s in steps if s is not background]
        inside += sum(5.0 <= s.at_s < 65.0 for s in others)
        plain = dataclasses.replace(settings, background=None)
        assert others == list(build_schedule(plain, NODES, seed, 120.0, "t.toml").steps)
    assert inside > len(SEEDS)


def test_an_unlink_of_the_clusters_a_background_unlink_holds_would_relink_them() -> None:
    background = FaultStep(2.0, "unlink-replication", 100.0, ("a", "b"), 1, beneath=True)
    assert FaultStep(5.0, "unlink-replication", 3.0, ("a", "b"), 2).would_relink(background)
    assert FaultStep(5.0, "unlink-replication", 3.0, (), 2).would_relink(background)
    assert not FaultStep(5.0, "unlink-replication", 3.0, ("b", "a"), 2).would_relink(
        background)  # the other way round: another link
    assert not FaultStep(5.0, "cut-wan", 3.0, ("a", "b"), 2).would_relink(background)
    assert not FaultStep(5.0, "kill", 3.0, ("a-broker1",), 2).would_relink(background)


def test_a_network_cut_or_an_instant_fault_cannot_be_a_background() -> None:
    for fault in ("isolate", "cut-wan", "expire-session"):
        settings = NemesisSettings("random", faults=("kill",), background=fault,
                                   background_s=10.0)
        with pytest.raises(FaultPlanError, match="cannot stay on beneath other faults"):
            build_schedule(settings, TWO_CLUSTERS, 1, 60.0, "t.toml")


def test_a_quiet_end_heals_everything_where_it_begins_and_keeps_the_faults_before_it() -> None:
    """The faults of a 120 s run with a 40 s quiet end are those of an 80 s run, and the
    final heal comes at 80 s, so nothing is on in the last 40 s of the load."""
    for seed in SEEDS:
        settings = NemesisSettings("random", faults=("kill", "pause"), interval_s=4.0,
                                   duration_s=6.0, overlap=0.5, background="kill",
                                   background_at_s=10.0, background_s=90.0)
        quiet = build_schedule(dataclasses.replace(settings, quiet_end_s=40.0), NODES, seed,
                               120.0, "t.toml")
        assert quiet == build_schedule(settings, NODES, seed, 80.0, "t.toml")
        actions = quiet.actions()
        assert actions[-1].kind == "heal" and actions[-1].at_s == 80.0
        assert all(action.at_s < 80.0 for action in actions[:-1])
