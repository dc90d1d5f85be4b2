"""The final heal brings the cluster back whole: after a fault that can end a broker's
metadata session (which may have shut the broker down, PIP-57), it starts every broker it
can, one still running left alone; after faults that keep sessions, only what they broke."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from harness.target import Node, TargetCluster
from history.writer import HistoryWriter
from nemesis.runner import NemesisRunner
from nemesis.schedule import FaultStep, Schedule

TOPIC = "persistent://public/default/t"


@dataclass
class RecordingNode:
    name: str
    calls: list[str] = field(default_factory=list)

    def kill(self) -> None:
        self.calls.append("kill")

    def start(self) -> None:
        self.calls.append("start")

    def pause(self) -> None:
        self.calls.append("pause")

    def resume(self) -> None:
        self.calls.append("resume")


class OneCluster:
    """Two brokers that can be killed and paused, and a ZooKeeper server that can too."""

    def __init__(self) -> None:
        nodes = (*(Node(f"a-broker{n}", "broker", "a", f"10.0.0.{n}",
                        frozenset({"kill", "pause"})) for n in (1, 2)),
                 Node("a-zk1", "zookeeper", "a", "10.0.0.9", frozenset({"kill", "pause"})))
        self.clusters = (TargetCluster("a", (), (), None, nodes),)
        self.network = None
        self.controls = {node.name: RecordingNode(node.name) for node in nodes}

    def control(self, name: str) -> RecordingNode:
        return self.controls[name]


def _run(tmp_path: Path, *steps: FaultStep) -> tuple[OneCluster, list[tuple[str, str, list]]]:
    target = OneCluster()
    with HistoryWriter(tmp_path / "history.jsonl") as history:
        NemesisRunner(Schedule(steps, 0.05), target, history, TOPIC).run(
            time.monotonic(), threading.Event())
    events = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    return target, [(e["type"], e["f"], json.loads(e["detail"])["targets"])
                    for e in events if e["type"] == "ok"]


def test_after_a_pause_every_broker_is_started_again(tmp_path: Path) -> None:
    """A pause of ZooKeeper may have expired both brokers' sessions."""
    target, ops = _run(tmp_path, FaultStep(0.0, "pause", 30.0, ("a-zk1",), 1))
    assert ops == [("ok", "pause", ["a-zk1"]), ("ok", "heal", []),
                   ("ok", "resume", ["a-zk1"]), ("ok", "start", ["a-broker1", "a-broker2"])]
    assert target.controls["a-broker1"].calls == ["start"]
    assert target.controls["a-zk1"].calls == ["pause", "resume"]


def test_after_a_kill_only_the_killed_broker_is_started(tmp_path: Path) -> None:
    """A kill keeps the other brokers' sessions: nothing else needs starting."""
    target, ops = _run(tmp_path, FaultStep(0.0, "kill", 30.0, ("a-broker2",), 1))
    assert ops == [("ok", "kill", ["a-broker2"]), ("ok", "heal", []),
                   ("ok", "start", ["a-broker2"])]
    assert target.controls["a-broker1"].calls == []
