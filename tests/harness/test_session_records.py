"""The `scalable` workload's record of a stream consumer's session: a registration the
close cut short ends `info` before the `unregister`, and what that attempt reports after
the close began cannot end the `unregister` in its name; a registration a broker refused
as not leading is `fail`, and the consumer's process goes on."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import cast

from harness.scalable_client.session_events import Assignment
from harness.workloads.scalable import ScalableWorkload, _Session
from history.writer import HistoryWriter, SequentialIds


def test_a_registration_cut_short_by_the_close_leaves_the_unregister_its_own(
        tmp_path: Path) -> None:
    writer = HistoryWriter(tmp_path / "history.jsonl")
    workload = SimpleNamespace(context=SimpleNamespace(history=writer, topic="t", cluster="a"),
                               ids=SequentialIds("p"))
    session = _Session(cast(ScalableWorkload, workload), "stream", "stream-0")
    session.registering()
    session.registered(Assignment(1, (0, 2)), None)
    session.pushed(Assignment(1, (0,)))
    session.registering()  # the controller went away: registering again
    session.unregistering()  # the close begins before the answer
    session.registered(None, "CancelledError")  # the cancelled attempt reports late
    session.unregistered(None)
    writer.close()
    events = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert [(e["type"], e["f"], e.get("error")) for e in events] == [
        ("invoke", "register", None), ("ok", "register", None), ("ok", "assign", None),
        ("invoke", "register", None), ("info", "register", "superseded"),
        ("invoke", "unregister", None), ("ok", "unregister", None)]
    assert json.loads(events[1]["detail"]) == {"segments": [0, 2]}
    assert events[4]["process"] != events[5]["process"]  # an `info` retires the process


def test_a_registration_refused_by_a_broker_that_does_not_lead_fails(tmp_path: Path) -> None:
    writer = HistoryWriter(tmp_path / "history.jsonl")
    workload = SimpleNamespace(context=SimpleNamespace(history=writer, topic="t", cluster="a"),
                               ids=SequentialIds("p"))
    session = _Session(cast(ScalableWorkload, workload), "stream", "stream-0")
    session.registering()
    session.registered(None, "NotController", refused=True)
    session.registering()
    session.registered(None, "TimeoutError")
    writer.close()
    events = [json.loads(line) for line in (tmp_path / "history.jsonl").read_text().splitlines()]
    assert [(e["type"], e.get("error")) for e in events] == [
        ("invoke", None), ("fail", "NotController"), ("invoke", None), ("info", "TimeoutError")]
    assert events[1]["process"] == events[2]["process"]  # a `fail` keeps the process
