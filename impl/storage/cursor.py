"""`ManagedCursor`: a subscription's durable position in a managed ledger.

State: the mark-delete position (everything at or before it is acknowledged) and the
individually acknowledged ranges above it. Every acknowledgement is persisted before the
call returns, as one compare-and-set of the cursor's node; acknowledgements that arrive
while a write is under way are folded into the next write, so a burst of acks costs a few
ZooKeeper writes, not one each. An acknowledgement applies in memory first, so until its
write lands it is not what a new owner would find: `persisted` is, and the topic's stats
report it. A write that fails while ZooKeeper is away is tried again every OWED_RETRY_S
until one lands, as Pulsar flushes a cursor whose mark-delete is not yet stored
(`managedLedgerCursorPositionFlushSeconds`): the client sends an acknowledgement once, and
after the last one of a consumer that has read everything nothing else would store it.
The read position lives in memory only: after a reopen it starts again at the first
unacknowledged entry (redelivery, as in Pulsar).

`NonDurableCursorImpl` is a reader's cursor: the same state and reads, never persisted.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from impl.metadata.errors import Unavailable, VersionConflict
from impl.metadata.owned_node import OwnedNode
from impl.storage.api import Entry, OwnershipLost, Position
from impl.storage.ledger_info import CursorInfo, cursor_path
from impl.storage.positions import AckRanges

if TYPE_CHECKING:
    from impl.storage.managed_ledger import ManagedLedgerImpl

THROTTLED_WRITE_S = 1.0
"""Under the mutant `cursor-write-throttled-unflushed`, how long after a write the next
one is held back (Pulsar's default mark-delete rate limit is one per second)."""


OWED_RETRY_S = 1.0
"""How often a cursor whose last write failed writes again, until one lands."""


class ManagedCursorImpl:
    def __init__(self, name: str, ledger: ManagedLedgerImpl, info: CursorInfo,
                 version: int) -> None:
        self.name = name
        self._ledger = ledger
        self._node = OwnedNode(ledger.context.store, cursor_path(ledger.name, name), version)
        self._persisted = info
        self._mark_delete = info.mark_delete
        self._acks = AckRanges(list(info.individually_deleted))
        self._properties = dict(info.properties)
        self._read_position = self._first_unacked(self._mark_delete)
        self._rewinds = 0
        self._changes = 0
        self._persisted_changes = 0
        self._persisting = asyncio.Lock()
        self._throttled = ledger.context.mutants.on("cursor-write-throttled-unflushed")
        self._written_at = 0.0
        """When the cursor was last stored (a `time.monotonic()`), for the mutant."""
        self._owed: asyncio.Task[None] | None = None
        """Writes again what a failed write did not store (OWED_RETRY_S)."""

    @property
    def mark_delete_position(self) -> Position:
        return self._mark_delete

    @property
    def individually_deleted(self) -> list[tuple[Position, Position]]:
        return list(self._acks.ranges)

    @property
    def persisted(self) -> CursorInfo:
        return self._persisted

    @property
    def read_position(self) -> Position:
        return self._read_position

    @property
    def properties(self) -> dict[str, int]:
        return dict(self._properties)

    async def put_property(self, name: str, value: int) -> None:
        if self._properties.get(name) != value:
            self._properties[name] = value
            self._changes += 1
        await self._persist()

    async def read_entries(self, max_entries: int) -> list[Entry]:
        start = self._first_unacked(self._read_position)
        positions: list[Position] = []
        for position in self._ledger.sequence.positions_from(start):
            if len(positions) >= max_entries:
                break
            if not self._acks.contains(position):
                positions.append(position)
        if not positions:
            self._read_position = start
            return []
        rewinds = self._rewinds
        entries = await self._ledger.read(positions)
        if rewinds == self._rewinds:  # a rewind during the read stands
            self._read_position = max(self._read_position,
                                      self._ledger.sequence.next_position(positions[-1]))
        return self._still_unacknowledged(entries)

    def has_more(self) -> bool:
        return self._ledger.sequence.exists(self._first_unacked(self._read_position))

    async def wait_for_more(self) -> None:
        """Return once an unacknowledged entry exists past the read position, or the
        managed ledger is terminated or closed meanwhile (then `has_more()` may still be
        False). A ledger terminated before the call has nothing more to come, so the wait
        lasts until it closes: callers loop on this, and returning at once made a drained
        segment's dispatcher spin on the event loop."""
        terminated_before = self._ledger.terminated
        while not self.has_more() and not self._ledger.closed:
            if self._ledger.terminated and not terminated_before:
                return
            await self._ledger.wait_for_entries()

    def rewind(self) -> None:
        self._rewinds += 1
        self._read_position = self._first_unacked(self._mark_delete)

    async def read_positions(self, positions: list[Position]) -> list[Entry]:
        sequence = self._ledger.sequence
        wanted = [p for p in sorted(set(positions))
                  if self._unacknowledged(p) and sequence.exists(p)]
        return self._still_unacknowledged(await self._ledger.read(wanted))

    async def reset(self, read_from: Position) -> None:
        self._place_before(read_from)
        await self._persist()

    async def mark_delete(self, position: Position,
                          properties: dict[str, int] | None = None) -> None:
        if position > self._mark_delete:
            self._mark_delete = self._acks.advance(position, self._ledger.sequence)
            self._after_ack()
        if properties is not None and properties != self._properties:
            self._properties = dict(properties)
            self._changes += 1
        await self._persist()

    async def delete(self, positions: list[Position]) -> None:
        for position in positions:
            if position > self._mark_delete:
                self._acks.add(position)
        self._mark_delete = self._acks.advance(self._mark_delete, self._ledger.sequence)
        self._after_ack()
        await self._persist()

    async def flush(self) -> None:
        await self._persist()

    def backlog(self) -> int:
        last = self._ledger.last_confirmed
        if last is None or last <= self._mark_delete:
            return 0
        sequence = self._ledger.sequence
        return sequence.count_between(self._mark_delete, last) - self._acks.count(sequence)

    def unacknowledged(self) -> Iterator[Position]:
        sequence = self._ledger.sequence
        start = sequence.next_position(self._mark_delete)
        return (p for p in sequence.positions_from(start) if not self._acks.contains(p))

    # --- internals ---------------------------------------------------------------------

    def _unacknowledged(self, position: Position) -> bool:
        return position > self._mark_delete and not self._acks.contains(position)

    def _still_unacknowledged(self, entries: list[Entry]) -> list[Entry]:
        """`entries` less those acknowledged while they were read: a consumer that had a
        message from the topic's previous owner may acknowledge it here while this owner
        reads it for the first time, and it must not go out again after that."""
        return [e for e in entries if self._unacknowledged(e.position)]

    def _place_before(self, read_from: Position) -> None:
        """Mark-delete just before `read_from`, kept between "nothing acknowledged" and
        the last entry; every acknowledgement above it and the read position start over."""
        sequence = self._ledger.sequence
        first, last = sequence.before_first(), sequence.last_position
        if read_from.ledger_id < 0 or last is None:
            self._mark_delete = first
        else:
            before = Position(read_from.ledger_id, max(read_from.entry_id, 0) - 1)
            self._mark_delete = max(first, min(last, before))
        self._acks = AckRanges()
        self._changes += 1
        self.rewind()

    def _first_unacked(self, position: Position) -> Position:
        """The first position at or after `position` (and after mark-delete) that is not
        acknowledged; it may lie past the last entry."""
        sequence = self._ledger.sequence
        position = max(position, sequence.next_position(self._mark_delete))
        position = sequence.next_position(Position(position.ledger_id, position.entry_id - 1))
        while (acked := self._acks.range_holding(position)) is not None:
            position = sequence.next_position(acked[1])
        return position

    def _after_ack(self) -> None:
        self._changes += 1
        self._read_position = self._first_unacked(self._read_position)

    async def _persist(self) -> None:
        wanted = self._changes
        if self._throttled and time.monotonic() - self._written_at < THROTTLED_WRITE_S:
            return  # held back by the rate limit, and no flush ever stores it
        async with self._persisting:
            if self._persisted_changes >= wanted:
                return  # a write that started after our change already carried it
            changes = self._changes
            info = CursorInfo(self._mark_delete, tuple(self._acks.ranges),
                              tuple(sorted(self._properties.items())))
            try:
                await self._ledger.context.blocking(self._node.write, info.to_json())
            except VersionConflict:
                raise OwnershipLost(f"cursor {self.name} of {self._ledger.name} was written "
                                    "by another owner") from None
            except Unavailable:
                self._retry_owed()
                raise
            self._persisted_changes = changes
            self._persisted = info
            if self._throttled:
                self._written_at = time.monotonic()

    def _retry_owed(self) -> None:
        if self._owed is None or self._owed.done():
            self._owed = asyncio.get_running_loop().create_task(self._write_owed())

    async def _write_owed(self) -> None:
        """Write until the stored cursor has every change, the ledger closes or another
        owner wrote the cursor. A throttled cursor (the mutant) has no flush at all."""
        while (not self._throttled and not self._ledger.closed
               and self._persisted_changes < self._changes):
            await asyncio.sleep(OWED_RETRY_S)
            try:
                await self._persist()
            except OwnershipLost:
                return
            except Unavailable:
                continue


class NonDurableCursorImpl(ManagedCursorImpl):
    """A reader's cursor (Pulsar's NonDurableCursorImpl): positions, reads and
    acknowledgements as a durable cursor has them, but nothing reaches ZooKeeper, and the
    managed ledger does not list it among its cursors."""

    def __init__(self, name: str, ledger: ManagedLedgerImpl, initial_mark_delete: Position,
                 start: Position | None) -> None:
        super().__init__(name, ledger, CursorInfo(initial_mark_delete), version=-1)
        last = ledger.last_confirmed
        # Pulsar places the cursor by the position before `start`; past the last entry
        # (MessageId.latest among them) the initial position decides instead.
        if (start is not None and last is not None
                and Position(start.ledger_id, start.entry_id - 1) <= last):
            self._place_before(start)

    async def _persist(self) -> None:
        """Nothing to write: a reader's position lives as long as the reader."""
