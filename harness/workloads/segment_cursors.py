"""`cursor` readings of a scalable topic's subscriptions, from PIP-468's topic stats.

A scalable topic's subscription has one cursor per segment, each on the broker that owns
the segment. The topic's stats (`GET .../stats` of the scalable admin API) gather them
all: per segment, each subscription's mark-delete position and backlog, and the segment
topic's connected consumers with what is out at them. One reading per subscription sums
the counts over the segments and keeps each segment's own figures in `detail.segments`,
so `stalled-subscription` can see a subscription whose consumers are connected and idle
while some segment's backlog waits (a segment dealt to nobody has no consumer of its own:
only the subscription's count shows that someone is there to read it).

A reading names no single position (`position` is left out): there is none for the
subscription as a whole. The scalable workload confirms its acks from the broker's
ACK_RESPONSE, so no ack waits on these readings.

The readings are taken about every `POLL_S` from the start of the load to the end of the
drain, and each drain poll takes one too (its backlogs are the drain's answer); a round in
which some segment's owner does not answer records nothing, as a topic whose stats do not
answer does.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection
from typing import Any

from harness.workloads.base import WorkloadContext
from harness.workloads.cursors import POLL_S

Stats = Callable[[], dict[str, Any] | None]
"""The topic's stats now, or None when no broker answers."""


class SegmentCursorObserver:
    """Records the readings (module docstring) of `subscriptions`; `backlogs()` also
    answers the drain. `start()` once the subscriptions exist, `stop()` at the end."""

    def __init__(self, context: WorkloadContext, stats: Stats,
                 subscriptions: Collection[str]) -> None:
        self._context = context
        self._stats = stats
        self._subscriptions = frozenset(subscriptions)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._poll, name="segment-cursors", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def backlogs(self) -> dict[str, int] | None:
        """Take a reading; `segment/subscription` -> its backlog, None while some
        segment's owner does not answer (a segment that does not exist has nothing to
        read)."""
        stats = self._stats()
        per_segment = None if stats is None else segment_cursors(stats, self._subscriptions)
        if per_segment is None:
            return None
        for subscription, segments in per_segment.items():
            if segments:
                self._record(subscription, segments)
        return {f"{segment}/{subscription}": cursor["backlog"]
                for subscription, segments in per_segment.items()
                for segment, cursor in segments.items()}

    def _poll(self) -> None:
        while not self._stop.wait(POLL_S):
            self.backlogs()

    def _record(self, subscription: str, segments: dict[str, dict[str, Any]]) -> None:
        c = self._context
        totals = {count: sum(cursor[count] for cursor in segments.values())
                  for count in ("backlog", "consumers", "unacked")}
        c.history.record("observer", "ok", "cursor", value=subscription, topic=c.topic,
                         subscription=subscription, cluster=c.cluster,
                         detail={**totals, "segments": segments})


def segment_cursors(stats: dict[str, Any], subscriptions: Collection[str]
                    ) -> dict[str, dict[str, dict[str, Any]]] | None:
    """subscription -> segment id (text) -> `{"mark_delete", "backlog", "consumers",
    "unacked"}` for the segments that have a cursor of it; None when some segment's
    owner answered with an error."""
    found: dict[str, dict[str, dict[str, Any]]] = {s: {} for s in subscriptions}
    for segment, entry in stats.get("segments", {}).items():
        storage = entry.get("storage")
        if storage is None:
            continue
        if "error" in storage:
            return None
        clients = (storage.get("clients") or {}).get("subscriptions", {})
        for subscription, cursor in storage.get("subscriptions", {}).items():
            if subscription not in found:
                continue
            connected = clients.get(subscription, {})
            found[subscription][segment] = {
                "mark_delete": cursor.get("markDeletePosition"),
                "backlog": int(cursor.get("msgBacklog", 0)),
                "consumers": len(connected.get("consumers") or []),
                "unacked": int(connected.get("unackedMessages", 0))}
    return found
