"""A scalable topic's `cursor` readings, taken from the PIP-468 stats as the reference
broker answers them: one per subscription, the segments' figures kept, the counts summed;
nothing recorded in a round where some segment's owner did not answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.workloads.base import WorkloadContext
from harness.workloads.segment_cursors import SegmentCursorObserver
from harness.workloads.settings import WorkloadSettings
from history.writer import HistoryWriter

TOPIC = "topic://t/ns/x"


def _segment(backlogs: dict[str, int], consumers: dict[str, int],
             mark_delete: str = "20:-1") -> dict[str, Any]:
    """One segment's entry of the stats: its owner's cursors and connected consumers."""
    return {"state": "ACTIVE", "storage": {
        "terminated": False,
        "subscriptions": {name: {"markDeletePosition": mark_delete, "msgBacklog": backlog,
                                 "drained": False} for name, backlog in backlogs.items()},
        "clients": {"publishers": [], "subscriptions": {
            name: {"consumers": [{"consumerName": f"{name}-{n}", "unackedMessages": 0}
                                 for n in range(count)],
                   "unackedMessages": 0} for name, count in consumers.items()}}}}


STATS = {"epoch": 11, "segments": {
    "8": _segment({"stream": 0, "queue": 0, "probe": 4}, {"stream": 1}, "16:479"),
    "17": _segment({"stream": 83, "queue": 0}, {"queue": 2}),
    "18": _segment({"stream": 145, "queue": 0}, {"queue": 2}, "21:-1"),
    "3": {"state": "SEALED", "storage": None}}}


def _observer(tmp_path: Path, answers: list[dict[str, Any] | None]
              ) -> tuple[SegmentCursorObserver, HistoryWriter]:
    history = HistoryWriter(tmp_path / "history.jsonl")
    context = WorkloadContext(history=history, settings=WorkloadSettings(), seed=1,
                              cluster="a", service_url="pulsar://127.0.0.1:1",
                              admin_urls=("http://127.0.0.1:2",), topic=TOPIC,
                              client_log=tmp_path / "client.log")
    return SegmentCursorObserver(context, lambda: answers.pop(0), ("stream", "queue")), history


def _readings(history: HistoryWriter) -> list[dict[str, Any]]:
    history.close()
    return [event for event in map(json.loads, history.path.read_text().splitlines())
            if event["f"] == "cursor"]


def test_each_subscription_is_read_over_its_segments(tmp_path: Path) -> None:
    observer, history = _observer(tmp_path, [STATS])

    backlogs = observer.backlogs()

    assert backlogs == {"8/stream": 0, "8/queue": 0, "17/stream": 83, "17/queue": 0,
                        "18/stream": 145, "18/queue": 0}, "the probe's cursor has no reader"
    by_subscription = {r["subscription"]: r for r in _readings(history)}
    stream = by_subscription["stream"]
    assert stream["topic"] == TOPIC and stream["cluster"] == "a" and "position" not in stream
    detail = json.loads(stream["detail"])
    assert (detail["backlog"], detail["consumers"], detail["unacked"]) == (228, 1, 0)
    assert detail["segments"]["17"] == {"mark_delete": "20:-1", "backlog": 83,
                                        "consumers": 0, "unacked": 0}
    assert detail["segments"]["8"]["consumers"] == 1
    assert json.loads(by_subscription["queue"]["detail"])["consumers"] == 4


def test_a_round_with_an_owner_that_did_not_answer_records_nothing(tmp_path: Path) -> None:
    unanswered = {"segments": {**STATS["segments"], "9": {"storage": {"error": "refused"}}}}
    observer, history = _observer(tmp_path, [unanswered, None])

    assert observer.backlogs() is None
    assert observer.backlogs() is None
    assert _readings(history) == []
