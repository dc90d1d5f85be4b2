"""The merge probe of the `scalable` workload (`[workload] merge_union_probe`).

PIP-468's merge starts by taking "the union" of both parents' subscriptions, "so no
subscription is lost". In a plain run both parents hold the same ones (a subscription is
made on every active segment, and children inherit their parents'), so a merge that kept
only one parent's would pass unseen. Parents differ when the making of a subscription
stopped partway: the controller makes its cursors segment by segment, and a leader can
die between two. The probe puts the topic in that state on purpose, through the Segments
admin API the controller itself uses: before a merge each parent gets a subscription of
its own, and once the merge is done the merged segment must hold every subscription
either parent held. The subscriptions it makes have no consumer and are not the
workload's: the drain does not wait for them.

Recorded under the layout driver's process (`admin`), after the merge's own operation:
a `probe` whose `value` is `PROBE`, `detail` `{"expected": [...], "parents": [a, b],
"merged": c}` and the completion's `detail` `{"expected", "observed"}` (the parents'
subscriptions the merged segment holds), both sorted lists; `contract` names it when the
two differ. A probe whose preparation or reading failed completes `info`; a merge that
did not complete has no probe.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from harness.workloads.base import WorkloadContext
from harness.workloads.scalable_admin import AdminRefused, AdminUnreachable, ScalableTopicAdmin

PROBE = "merge-keeps-parents-subscriptions"
PREFIX = "merge-probe"
"""The probe's own subscriptions are `merge-probe-<n>-<parent id>`."""
READ_TIMEOUT_S = 10.0
"""How long the merged segment's subscriptions may stay unreadable (its owner loading it)."""
RETRY_S = 0.5


class ProbeFailed(Exception):
    """The probe could not prepare its parents or read the merged segment."""


@dataclass(frozen=True)
class Prepared:
    """Two parents, each with a subscription of its own, and what both hold now."""

    parents: tuple[int, int]
    expected: list[str]


class MergeProbe:
    def __init__(self, context: WorkloadContext, admin: ScalableTopicAdmin) -> None:
        self._context = context
        self._admin = admin
        self._made = 0

    def prepare(self, parents: tuple[int, int]) -> Prepared | str:
        """Give each parent a subscription the other has not; the prepared probe, or why
        it could not be prepared."""
        self._made += 1
        try:
            before = self._admin.stats()
            for segment in parents:
                self._admin.create_segment_subscription(
                    _segment(before, segment)["segmentTopic"], f"{PREFIX}-{self._made}-{segment}")
            stats = self._admin.stats()
            held = set().union(*(_subscriptions(stats, segment) for segment in parents))
        except (AdminRefused, AdminUnreachable, ProbeFailed, KeyError) as exc:
            return f"{type(exc).__name__}: {exc}"
        return Prepared(parents, sorted(held))

    def judge(self, prepared: Prepared | str, merged: int) -> None:
        """Record the probe of a completed merge: the parents' subscriptions the merged
        segment holds; `info` when it was not prepared or the segment stayed unreadable."""
        c = self._context
        fields: dict[str, Any] = {"topic": c.topic, "cluster": c.cluster, "value": PROBE}
        if isinstance(prepared, str):
            c.history.record("admin", "invoke", "probe", **fields)
            c.history.record("admin", "info", "probe", error="not-prepared",
                             detail={"reason": prepared}, **fields)
            return
        expected = prepared.expected
        c.history.record("admin", "invoke", "probe", detail={
            "expected": expected, "parents": list(prepared.parents), "merged": merged},
            **fields)
        try:
            held = self._merged_subscriptions(merged)
        except ProbeFailed as exc:
            c.history.record("admin", "info", "probe", error="unreadable",
                             detail={"reason": str(exc)}, **fields)
            return
        observed = [s for s in expected if s in held]
        c.history.record("admin", "ok" if observed == expected else "fail", "probe",
                         detail={"expected": expected, "observed": observed}, **fields)

    def _merged_subscriptions(self, merged: int) -> set[str]:
        deadline = time.monotonic() + READ_TIMEOUT_S
        while True:
            try:
                return _subscriptions(self._admin.stats(), merged)
            except (AdminRefused, AdminUnreachable, ProbeFailed) as exc:
                if time.monotonic() > deadline:
                    raise ProbeFailed(f"segment {merged}: {exc}") from None
            time.sleep(RETRY_S)


def _segment(stats: dict[str, Any], segment: int) -> dict[str, Any]:
    entry = stats.get("segments", {}).get(str(segment))
    if not isinstance(entry, dict):
        raise ProbeFailed(f"segment {segment} is not in the topic's stats")
    return entry


def _subscriptions(stats: dict[str, Any], segment: int) -> set[str]:
    """The subscriptions (cursors) the segment's owner reports for it."""
    storage = _segment(stats, segment).get("storage")
    if not isinstance(storage, dict) or "error" in storage:
        raise ProbeFailed(f"segment {segment}'s owner did not report its cursors: "
                          f"{storage!r}")
    return set(storage.get("subscriptions", {}))
