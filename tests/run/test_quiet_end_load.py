"""A schedule with a quiet end heals before the load is over, and the load goes on to its
deadline: the heal ends the faults, not the workload (starquake/run/pipeline.py)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace

from history.writer import HistoryWriter
from nemesis.runner import FaultStatus
from nemesis.schedule import Schedule
from scenarios.format import Scenario
from starquake.run import pipeline
from tests.run.test_runner import Node, Targets


class Load:
    """A workload that runs until its deadline or `stop`, and notes which came first."""

    topic = "persistent://public/default/t"

    def __init__(self) -> None:
        self.stopped_early: bool | None = None

    def run(self, deadline: float, stop: threading.Event) -> None:
        self.stopped_early = stop.wait(max(0.0, deadline - time.monotonic()))


def test_the_load_outlasts_a_heal_that_comes_before_its_deadline(tmp_path: Path) -> None:
    load = Load()
    scenario = Scenario(name="quiet", path=tmp_path / "quiet.toml", duration_s=0.6)
    started = time.monotonic()
    with HistoryWriter(tmp_path / "history.jsonl") as history:
        pipeline._load_under_faults(
            scenario, Schedule((), heal_at_s=0.1), Targets([Node("a-broker1", [])]),
            load, history, FaultStatus(), SimpleNamespace(phase=lambda *_a, **_k: None))
    assert load.stopped_early is False
    assert time.monotonic() - started >= 0.6
