"""What `starquake reproduce` takes from a run directory: the faults as they struck, pinned
onto the schedule the seed plans (the end-to-end replay is in test_smoke_suite.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from history.writer import HistoryWriter
from nemesis.schedule import FaultStep, Schedule
from starquake.run.reproduce import NotARun, faults_hit, replay_options


def step(at_s: float, fault: str, *targets: str) -> FaultStep:
    return FaultStep(at_s, fault, 2.0, targets, shape_seed=1)


def test_runtime_targets_are_pinned_to_the_nodes_hit_in_order() -> None:
    planned = Schedule((step(1, "kill", "owner"), step(4, "isolate", "owner"),
                        step(8, "pause", "a-broker2"), step(30, "kill", "owner")), heal_at_s=20)
    pinned = planned.pinned([("kill", ("a-broker3",)), ("partition", ("a-broker1",))])
    assert [s.targets for s in pinned.steps] == [
        ("a-broker3",), ("a-broker1",), ("a-broker2",), ("owner",)]  # the rest as planned
    assert [s.at_s for s in pinned.steps] == [s.at_s for s in planned.steps]


def test_the_faults_hit_are_read_from_the_history(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    with HistoryWriter(path) as writer:
        writer.record("harness", "ok", "meta", detail={"seed": 9})
        for f, targets in (("kill", ["a-broker2"]), ("start", ["a-broker2"]),
                           ("partition", ["a-zk1"]), ("heal", [])):
            writer.record("nemesis", "invoke", f, value=f, detail={"targets": targets})
            writer.record("nemesis", "ok", f, value=f, detail={"targets": targets})
    with path.open("a") as torn:
        torn.write('{"index": 99, "process": "nemesis", "ty')
    assert faults_hit(path) == (("kill", ("a-broker2",)), ("partition", ("a-zk1",)))
    (tmp_path / "scenario.toml").write_text('name = "x"\n')
    options = replay_options(tmp_path, None)
    assert (options.seed, options.scenario) == (9, tmp_path.resolve() / "scenario.toml")
    assert options.runs_dir == tmp_path.resolve().parent.parent


def test_a_directory_that_is_no_run_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(NotARun, match=f"^{tmp_path}: not a run directory"):
        replay_options(tmp_path, None)
