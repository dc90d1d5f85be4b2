"""A contract probe that differs while a fault disturbs its group is undecided (`info`),
not a failure; one that observed what it expected is `ok` whatever happened; without a
fault a difference is a failure. The nemesis's status says when a fault was on or had
just been."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from harness.workloads.base import WorkloadContext
from harness.workloads.contract.recording import Group
from harness.workloads.settings import WorkloadSettings
from history.writer import HistoryWriter, SequentialIds
from nemesis.runner import AFTERMATH_S, FaultStatus


def _probes(tmp_path: Path, disturbed: bool) -> tuple[Group, list[dict]]:
    path = tmp_path / "history.jsonl"
    with HistoryWriter(path) as history:
        context = WorkloadContext(
            history=history, settings=WorkloadSettings(kind="contract"), seed=1,
            cluster="a", service_url="pulsar://127.0.0.1:1", admin_urls=(), topic="t",
            client_log=tmp_path / "client.log", disturbed_since=lambda _since: disturbed)
        group = Group(context, SequentialIds("p"), "t", "g", ("same", "differs"))
        group.expect("same", [1, 2], [1, 2])
        group.expect("differs", [1, 2], [1, 1, 2, 2])
    done = [json.loads(line) for line in path.read_text().splitlines()]
    return group, [e for e in done if e["type"] != "invoke"]


@pytest.mark.parametrize(("disturbed", "second"), [(False, "fail"), (True, "info")])
def test_a_difference_under_a_fault_is_undecided(tmp_path: Path, disturbed: bool,
                                                  second: str) -> None:
    group, (same, differs) = _probes(tmp_path, disturbed)
    assert (same["type"], differs["type"]) == ("ok", second)
    assert group.disturbed is disturbed
    if disturbed:
        assert "fault" in json.loads(differs["detail"])["reason"]


def test_the_status_says_when_a_fault_was_on_or_had_just_been() -> None:
    status = FaultStatus()
    now = time.monotonic()
    assert not status.disturbed_since(now)
    status.begin(1, "pause", "a-broker1")
    assert status.disturbed_since(now + 3600)  # on now, whenever the exchange began
    status.end(1)
    assert status.disturbed_since(time.monotonic() + AFTERMATH_S - 1)
    assert not status.disturbed_since(time.monotonic() + AFTERMATH_S + 1)


def test_a_fault_ending_inside_another_of_its_kind_leaves_that_one_on() -> None:
    status = FaultStatus()
    status.begin("long", "kill", "a-broker1")
    status.begin("quick", "kill", "a-broker2")
    status.end("quick")
    assert status.disturbed_since(time.monotonic() + 3600)
    assert status.text() == "kill a-broker1"
    status.end("long")
    assert not status.disturbed_since(time.monotonic() + 3600)
