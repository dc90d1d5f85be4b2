"""A subscription that stopped delivering: `stalled-subscription`.

`lost` cannot tell a broker that withholds a subscription's backlog from idle, connected
consumers (the drain times out, and `lost` says unknown) from one that is merely slow.
The `cursor` observations can: readings taken while the consumers are connected, have
nothing out at them, and the backlog waits, yet the cursor does not move. A scalable
topic's reading covers every segment of the subscription (`detail.segments`): the
counts are summed, and the cursor has moved when any segment's mark-delete position has,
so a segment dealt to no consumer stalls the subscription while its consumers idle
elsewhere. Readings are a
few per second of a run, and the driver already holds them (`HistoryFrames.cursor_readings`),
so the rule runs there and only its findings become a (tiny) Spark frame.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pyspark.sql import DataFrame

from checkers.anomaly import CheckSettings
from checkers.frames import CursorScope, HistoryFrames, SmallFact
from checkers.stretches import maximal_stretches
from history.cursor import CursorReading, count_in
from history.schema import DEFAULT_STALLED_SUBSCRIPTION_BOUND_MS, detail_object

_MS = 1_000_000
_ANOMALY_ROWS = "checker string, run string, sort_key long, weight long, example string"


@dataclass(frozen=True)
class _Reading:
    fact: SmallFact
    detail: dict[str, Any]

    @cached_property
    def cursor(self) -> CursorReading:
        """Parsed only for idle readings, the only ones a stall compares: a reading's
        ranges can run to tens of kilobytes, and parsing every reading's held the driver
        for seconds while the executors waited for the checks it was planning."""
        return CursorReading.observed(self.fact.position, self.detail)

    @property
    def idle_with_backlog(self) -> bool:
        """Messages wait, consumers are connected, and none has any out."""
        return (count_in(self.detail, "backlog") > 0 and count_in(self.detail, "consumers") > 0
                and count_in(self.detail, "unacked") == 0)

    @cached_property
    def segments(self) -> dict[str, dict[str, Any]]:
        """A scalable topic's per-segment figures; empty for any other topic."""
        segments = self.detail.get("segments")
        if not isinstance(segments, dict):
            return {}
        return {str(segment): figures for segment, figures in segments.items()
                if isinstance(figures, dict)}

    def same_cursor(self, other: _Reading) -> bool:
        return (self.cursor.mark_delete, self.cursor.individually_deleted,
                _mark_deletes(self.segments)) == (
            other.cursor.mark_delete, other.cursor.individually_deleted,
            _mark_deletes(other.segments))

    def waiting_segments(self) -> dict[str, int]:
        """Segment -> backlog, for the segments with one."""
        return {segment: count_in(figures, "backlog")
                for segment, figures in self.segments.items() if count_in(figures, "backlog") > 0}


def _mark_deletes(segments: dict[str, dict[str, Any]]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted((segment, figures.get("mark_delete"))
                        for segment, figures in segments.items()))


def stalled_subscriptions(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    """One anomaly per stall: a run of consecutive readings of one subscription, each with
    a backlog, connected consumers and nothing unacknowledged at them, the cursor
    (mark-delete position and individually deleted ranges) the same throughout and the
    backlog never below the first reading's, spanning more than the bound."""
    by_scope: dict[CursorScope, list[_Reading]] = defaultdict(list)
    for fact in frames.cursor_readings:
        by_scope[(fact.run, fact.topic, fact.subscription, fact.cluster)].append(
            _Reading(fact, detail_object(fact.detail)))
    found = []
    for (run, topic, subscription, cluster), readings in by_scope.items():
        bound_ms = _bound_ms(frames, run)
        for first, last in _stalls(readings):
            span_ms = (last.fact.time - first.fact.time) / _MS
            if span_ms > bound_ms:
                example: dict[str, Any] = {
                    "events": [first.fact.index, last.fact.index], "topic": topic,
                    "subscription": subscription, "cluster": cluster,
                    "from_ms": first.fact.time / _MS, "to_ms": last.fact.time / _MS,
                    "backlog": last.cursor.backlog, "bound_ms": bound_ms}
                if last.segments:
                    example["segments"] = last.waiting_segments()
                found.append(("stalled-subscription", run, first.fact.index, 1,
                              json.dumps(example)))
    return frames.spark.createDataFrame(found, _ANOMALY_ROWS)


def _stalls(readings: list[_Reading]) -> list[tuple[_Reading, _Reading]]:
    """The first and last reading of each maximal stretch (in index order) of idle
    readings with the same cursor and a backlog not below the stretch's first."""
    return maximal_stretches(
        sorted(readings, key=lambda r: r.fact.index), lambda r: r.idle_with_backlog,
        lambda first, r: (r.idle_with_backlog and r.same_cursor(first)
                          and r.cursor.backlog >= first.cursor.backlog))


def _bound_ms(frames: HistoryFrames, run: str) -> float:
    bound = frames.meta_number(run, "stalled_subscription_bound_ms")
    return DEFAULT_STALLED_SUBSCRIPTION_BOUND_MS if bound is None else bound
