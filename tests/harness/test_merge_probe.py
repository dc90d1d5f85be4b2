"""The merge probe (harness/workloads/merge_probe.py) against an admin API kept in memory:
each parent gets a subscription of its own; a merge that keeps the union passes, one that
keeps a single parent's fails with the missing one named; a probe that could not be
prepared, or whose merged segment stays unreadable, is `info`, never a verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest

from harness.workloads import merge_probe
from harness.workloads.base import WorkloadContext
from harness.workloads.merge_probe import PROBE, MergeProbe
from harness.workloads.scalable_admin import AdminUnreachable, ScalableTopicAdmin
from harness.workloads.settings import WorkloadSettings
from history.writer import HistoryWriter

TOPIC = "topic://public/default/orders"


class _Admin:
    """Segments 0 and 1 hold the workload's subscriptions; `merge` makes segment 2 with
    the union of their cursors, or with the first parent's alone (`first_only`)."""

    def __init__(self, first_only: bool = False, unreadable: frozenset[int] = frozenset()
                 ) -> None:
        self.cursors: dict[int, set[str]] = {0: {"stream", "queue"}, 1: {"stream", "queue"}}
        self.first_only = first_only
        self.unreadable = unreadable
        self.made: list[tuple[str, str]] = []

    def stats(self) -> dict[str, Any]:
        return {"segments": {str(s): {
            "segmentTopic": f"segment://public/default/orders/0000-ffff-{s}",
            "storage": ({"error": "owner unreachable"} if s in self.unreadable else
                        {"subscriptions": {c: {"msgBacklog": 0} for c in cursors}})}
            for s, cursors in self.cursors.items()}}

    def create_segment_subscription(self, segment_topic: str, subscription: str) -> None:
        self.made.append((segment_topic, subscription))
        self.cursors[int(segment_topic.rsplit("-", 1)[1])].add(subscription)

    def merge(self) -> int:
        parents = [self.cursors[0]] if self.first_only else [self.cursors[0], self.cursors[1]]
        self.cursors[2] = set().union(*parents)
        return 2


def _probe(tmp_path: Path, admin: _Admin) -> tuple[MergeProbe, HistoryWriter]:
    history = HistoryWriter(tmp_path / "history.jsonl")
    context = WorkloadContext(history=history, settings=WorkloadSettings(), seed=1,
                              cluster="a", service_url="pulsar://127.0.0.1:1",
                              admin_urls=("http://127.0.0.1:2",), topic=TOPIC,
                              client_log=tmp_path / "client.log")
    return MergeProbe(context, cast(ScalableTopicAdmin, admin)), history


def _probes(history: HistoryWriter) -> list[dict[str, Any]]:
    history.close()
    events = [json.loads(line) for line in history.path.read_text().splitlines()]
    for event in events:
        assert event["process"] == "admin" and event["f"] == "probe"
        assert event["value"] == PROBE and event["topic"] == TOPIC
        event["detail"] = json.loads(event.get("detail", "{}"))
    return events


def test_a_merge_that_keeps_the_union_passes(tmp_path: Path) -> None:
    admin = _Admin()
    probe, history = _probe(tmp_path, admin)
    prepared = probe.prepare((0, 1))
    probe.judge(prepared, admin.merge())
    assert [s for _, s in admin.made] == ["merge-probe-1-0", "merge-probe-1-1"]
    assert admin.made[0][0].endswith("-0") and admin.made[1][0].endswith("-1")
    invoke, done = _probes(history)
    expected = ["merge-probe-1-0", "merge-probe-1-1", "queue", "stream"]
    assert invoke["type"] == "invoke"
    assert invoke["detail"] == {"expected": expected, "parents": [0, 1], "merged": 2}
    assert done["type"] == "ok"
    assert done["detail"] == {"expected": expected, "observed": expected}


def test_a_merge_that_keeps_one_parent_fails_naming_what_is_gone(tmp_path: Path) -> None:
    admin = _Admin(first_only=True)
    probe, history = _probe(tmp_path, admin)
    probe.judge(probe.prepare((0, 1)), admin.merge())
    _, done = _probes(history)
    assert done["type"] == "fail"
    assert done["detail"]["observed"] == ["merge-probe-1-0", "queue", "stream"]
    assert set(done["detail"]["expected"]) - set(done["detail"]["observed"]) == {
        "merge-probe-1-1"}


def test_each_probe_names_its_subscriptions_afresh(tmp_path: Path) -> None:
    admin = _Admin()
    probe, history = _probe(tmp_path, admin)
    for _ in range(2):
        probe.judge(probe.prepare((0, 1)), admin.merge())
    history.close()
    assert [s for _, s in admin.made] == [
        "merge-probe-1-0", "merge-probe-1-1", "merge-probe-2-0", "merge-probe-2-1"]


def test_a_probe_not_prepared_is_info(tmp_path: Path) -> None:
    admin = _Admin(unreadable=frozenset({1}))
    probe, history = _probe(tmp_path, admin)
    prepared = probe.prepare((0, 1))
    assert isinstance(prepared, str) and "segment 1" in prepared
    probe.judge(prepared, admin.merge())
    invoke, done = _probes(history)
    assert (invoke["type"], done["type"], done["error"]) == ("invoke", "info", "not-prepared")


def test_a_merged_segment_that_stays_unreadable_is_info(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(merge_probe, "READ_TIMEOUT_S", 0.0)
    admin = _Admin()
    probe, history = _probe(tmp_path, admin)
    prepared = probe.prepare((0, 1))
    admin.unreadable = frozenset({2})
    probe.judge(prepared, admin.merge())
    _, done = _probes(history)
    assert (done["type"], done["error"]) == ("info", "unreadable")


def test_an_admin_api_that_does_not_answer_leaves_the_probe_unprepared(
        tmp_path: Path) -> None:
    admin = _Admin()

    def silent() -> dict[str, Any]:
        raise AdminUnreachable("GET stats: no definite answer")

    admin.stats = silent  # type: ignore[method-assign]
    probe, history = _probe(tmp_path, admin)
    assert "AdminUnreachable" in str(probe.prepare((0, 1)))
    history.close()
