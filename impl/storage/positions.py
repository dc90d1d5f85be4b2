"""Position arithmetic over a managed ledger's ledgers, and a cursor's acknowledged
ranges: pure logic, so it is tested without bookies.

Positions order as (ledger id, entry id). Not every position holds an entry: closed
ledgers end at their last entry id, empty ledgers hold none, and the open ledger ends at
its last confirmed entry. `LedgerSequence` knows which exist.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass

from impl.storage.api import Position


@dataclass
class LedgerSpan:
    ledger_id: int
    last_entry_id: int
    """The last entry that exists (closed) or is confirmed (open); -1: none yet."""
    open: bool = False


class LedgerSequence:
    """The ledgers of one managed ledger, oldest first; at most the last one is open."""

    def __init__(self, spans: list[LedgerSpan]) -> None:
        self.spans = spans

    @property
    def last_position(self) -> Position | None:
        """The last entry that exists, None when there is none."""
        for span in reversed(self.spans):
            if span.last_entry_id >= 0:
                return Position(span.ledger_id, span.last_entry_id)
        return None

    def before_first(self) -> Position:
        """The mark-delete position of a cursor that has acknowledged nothing."""
        return Position(self.spans[0].ledger_id if self.spans else 0, -1)

    def next_position(self, after: Position) -> Position:
        """The first position after `after` that holds an entry or will hold the next one
        added (past the end: where the next add lands, or just past the last entry)."""
        for span in self.spans:
            if span.ledger_id == after.ledger_id:
                if after.entry_id < span.last_entry_id or span.open:
                    return Position(span.ledger_id, max(after.entry_id + 1, 0))
            elif span.ledger_id > after.ledger_id and (span.last_entry_id >= 0 or span.open):
                return Position(span.ledger_id, 0)
        last = self.last_position
        if last is None or last <= after:
            return Position(after.ledger_id, after.entry_id + 1)
        return Position(last.ledger_id, last.entry_id + 1)

    def exists(self, position: Position) -> bool:
        for span in self.spans:
            if span.ledger_id == position.ledger_id:
                return 0 <= position.entry_id <= span.last_entry_id
        return False

    def count_between(self, start: Position, end: Position) -> int:
        """How many entries lie in (start, end]."""
        total = 0
        for span in self.spans:
            first = 0 if span.ledger_id > start.ledger_id else start.entry_id + 1
            last = span.last_entry_id if span.ledger_id < end.ledger_id else min(
                span.last_entry_id, end.entry_id)
            if start.ledger_id <= span.ledger_id <= end.ledger_id and last >= first:
                total += last - first + 1
        return total

    def positions_from(self, start: Position) -> Iterator[Position]:
        """Every existing entry at or after `start`, in order."""
        for span in self.spans:
            if span.ledger_id < start.ledger_id:
                continue
            first = max(start.entry_id, 0) if span.ledger_id == start.ledger_id else 0
            for entry_id in range(first, span.last_entry_id + 1):
                yield Position(span.ledger_id, entry_id)


class AckRanges:
    """Individually acknowledged entries above mark-delete, as disjoint (exclusive start,
    inclusive end] ranges, merged when they touch (Pulsar's
    `individuallyDeletedMessages`). A single entry `l:e` is the range (l:e-1, l:e]."""

    def __init__(self, ranges: list[tuple[Position, Position]] | None = None) -> None:
        self.ranges: list[tuple[Position, Position]] = sorted(ranges or [])

    def add(self, position: Position) -> None:
        if self.contains(position):
            return
        start = Position(position.ledger_id, position.entry_id - 1)
        index = bisect.bisect_left(self.ranges, (start, position))
        self.ranges.insert(index, (start, position))
        self._merge_around(index)

    def _merge_around(self, index: int) -> None:
        if index + 1 < len(self.ranges) and self.ranges[index + 1][0] <= self.ranges[index][1]:
            self.ranges[index] = (self.ranges[index][0], self.ranges[index + 1][1])
            del self.ranges[index + 1]
        if index > 0 and self.ranges[index][0] <= self.ranges[index - 1][1]:
            self.ranges[index - 1] = (self.ranges[index - 1][0], self.ranges[index][1])
            del self.ranges[index]

    def contains(self, position: Position) -> bool:
        return self.range_holding(position) is not None

    def range_holding(self, position: Position) -> tuple[Position, Position] | None:
        # Ranges are disjoint and sorted by start; one holding `position` starts before it,
        # so it is the last range left of where (position, position) would be inserted.
        index = bisect.bisect_left(self.ranges, (position, position))
        if index > 0 and self.ranges[index - 1][0] < position <= self.ranges[index - 1][1]:
            return self.ranges[index - 1]
        return None

    def drop_through(self, mark_delete: Position) -> None:
        """Forget what mark-delete covers now."""
        kept = []
        for start, end in self.ranges:
            if end > mark_delete:
                kept.append((max(start, mark_delete), end))
        self.ranges = kept

    def advance(self, mark_delete: Position, ledgers: LedgerSequence) -> Position:
        """The mark-delete position after swallowing every range that no unacknowledged
        entry separates from it (a gap of positions without entries is closed)."""
        self.drop_through(mark_delete)
        while self.ranges and ledgers.next_position(mark_delete) > self.ranges[0][0]:
            mark_delete = self.ranges.pop(0)[1]
        return mark_delete

    def count(self, ledgers: LedgerSequence) -> int:
        return sum(ledgers.count_between(start, end) for start, end in self.ranges)
