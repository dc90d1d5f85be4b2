"""What ProcessFaults remembers, so that the final heal brings every node back."""

from __future__ import annotations

from dataclasses import dataclass, field

from nemesis.process import ProcessFaults


@dataclass
class Node:
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


def test_what_is_still_down_is_known_for_the_final_heal() -> None:
    faults = ProcessFaults()
    a, b, c = Node("a"), Node("b"), Node("c")
    faults.pause([a])
    faults.kill([b])
    faults.pause([c])
    faults.resume([c])
    assert (faults.paused, faults.killed) == (("a",), ("b",))
    faults.resume([a])
    faults.start([b])
    assert (faults.paused, faults.killed) == ((), ())
    assert a.calls == ["pause", "resume"] and b.calls == ["kill", "start"]


def test_a_killed_paused_node_is_started_not_resumed() -> None:
    faults = ProcessFaults()
    node = Node("broker1")
    faults.pause([node])
    event = faults.kill([node])
    assert (event.f, event.value, event.history_fields()["detail"]) == (
        "kill", "broker1", {"targets": ["broker1"]})
    assert (faults.paused, faults.killed) == ((), ("broker1",))
