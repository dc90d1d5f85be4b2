"""A random schedule's `overlap` and `roles`: two faults at once, and faults aimed past a
fault's own defaults, without moving the schedules written before either existed."""

from __future__ import annotations

import dataclasses
from itertools import pairwise

from harness.target import Node
from nemesis.faults.base import Surface
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


def test_a_fault_begun_inside_another_is_aimed_elsewhere() -> None:
    pairs = [(a, b) for seed in SEEDS for a, b in _overlapping(_steps(seed, overlap=0.5))]
    assert pairs
    assert all(a.targets != b.targets for a, b in pairs if b.targets)
