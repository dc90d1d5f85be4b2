"""A managed ledger in memory, only for unit tests of the front end's dispatch logic
(integration tests in tests/cluster use the real bookie and managed ledger). One ledger,
id 1; positions are `1:index`."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator

from impl.metadata.errors import Unavailable
from impl.storage.api import Entry, InitialPosition, OwnershipLost, Position, TopicTerminated
from impl.storage.ledger_info import CursorInfo

LEDGER_ID = 1


class MemoryCursor:
    def __init__(self, name: str, ledger: MemoryLedger, start: int) -> None:
        self.name = name
        self._ledger = ledger
        self._acked: set[int] = set(range(start))
        self._read = start
        self._properties: dict[str, int] = {}
        self._stored = self._state()
        self.failing_writes = 0
        """How many of the next writes fail as a lost metadata store does: applied in
        memory, not stored, `Unavailable` raised."""
        self.deposed = False
        """Set, every write fails as after another broker opened the topic: the stored
        cursor has moved on to its version, `OwnershipLost` raised."""

    def _state(self) -> CursorInfo:
        return CursorInfo(self.mark_delete_position, tuple(self.individually_deleted),
                          tuple(sorted(self._properties.items())))

    async def _store(self) -> None:
        if self.deposed:
            raise OwnershipLost(f"cursor {self.name} was written by another owner")
        if self.failing_writes:
            self.failing_writes -= 1
            raise Unavailable("set", f"cursor {self.name}", "ConnectionLoss")
        self._stored = self._state()

    @property
    def mark_delete_position(self) -> Position:
        index = 0
        while index in self._acked:
            index += 1
        return Position(LEDGER_ID, index - 1)

    @property
    def individually_deleted(self) -> list[tuple[Position, Position]]:
        return [(Position(LEDGER_ID, i - 1), Position(LEDGER_ID, i)) for i in sorted(self._acked)
                if i > self.mark_delete_position.entry_id]

    @property
    def persisted(self) -> CursorInfo:
        """The state as last stored; the same as in memory unless a write failed."""
        return self._stored

    @property
    def read_position(self) -> Position:
        return Position(LEDGER_ID, self._read)

    @property
    def properties(self) -> dict[str, int]:
        return dict(self._properties)

    async def put_property(self, name: str, value: int) -> None:
        self._properties[name] = value
        await self._store()

    def _unacked_from(self, index: int) -> list[int]:
        return [i for i in range(index, len(self._ledger.entries)) if i not in self._acked]

    async def read_entries(self, max_entries: int) -> list[Entry]:
        indices = self._unacked_from(self._read)[:max_entries]
        if indices:
            self._read = indices[-1] + 1
        return [self._ledger.entries[i] for i in indices]

    def has_more(self) -> bool:
        return bool(self._unacked_from(self._read))

    async def wait_for_more(self) -> None:
        while not self.has_more():
            async with self._ledger.appended:
                await self._ledger.appended.wait()

    def rewind(self) -> None:
        self._read = self.mark_delete_position.entry_id + 1

    async def read_positions(self, positions: list[Position]) -> list[Entry]:
        return [self._ledger.entries[p.entry_id] for p in positions
                if p.ledger_id == LEDGER_ID and 0 <= p.entry_id < len(self._ledger.entries)
                and p.entry_id not in self._acked]

    async def reset(self, read_from: Position) -> None:
        self.place_at(read_from)
        await self._store()

    def place_at(self, read_from: Position) -> None:
        """Everything before `read_from` acknowledged, nothing after it."""
        count = len(self._ledger.entries)
        if read_from.ledger_id != LEDGER_ID:
            start = 0 if read_from.ledger_id < LEDGER_ID else count
        else:
            start = min(max(read_from.entry_id, 0), count)
        self._acked = set(range(start))
        self._read = start

    async def mark_delete(self, position: Position,
                          properties: dict[str, int] | None = None) -> None:
        self._acked.update(range(position.entry_id + 1))
        if properties is not None:
            self._properties = dict(properties)
        await self._store()

    async def delete(self, positions: list[Position]) -> None:
        self._acked.update(p.entry_id for p in positions)
        await self._store()

    async def flush(self) -> None:
        if self._stored != self._state():
            await self._store()

    def backlog(self) -> int:
        return len(self._unacked_from(0))

    def unacknowledged(self) -> Iterator[Position]:
        return (Position(LEDGER_ID, i) for i in self._unacked_from(0))


class MemoryLedger:
    def __init__(self, name: str) -> None:
        self.name = name
        self.entries: list[Entry] = []
        self._cursors: dict[str, MemoryCursor] = {}
        self._terminated = False
        self.appended = asyncio.Condition()
        self.writes_flow = asyncio.Event()
        """Cleared, adds wait until it is set again: writes held in flight."""
        self.writes_flow.set()

    @property
    def last_confirmed(self) -> Position | None:
        return self.entries[-1].position if self.entries else None

    @property
    def terminated(self) -> bool:
        return self._terminated

    async def add_entry(self, data: bytes) -> Position:
        await self.writes_flow.wait()
        if self._terminated:
            raise TopicTerminated(f"{self.name} is terminated")
        position = Position(LEDGER_ID, len(self.entries))
        self.entries.append(Entry(position, data))
        async with self.appended:
            self.appended.notify_all()
        return position

    async def terminate(self) -> Position | None:
        self._terminated = True
        return self.last_confirmed

    async def open_cursor(self, name: str, initial: InitialPosition) -> MemoryCursor:
        if name not in self._cursors:
            start = 0 if initial == InitialPosition.EARLIEST else len(self.entries)
            self._cursors[name] = MemoryCursor(name, self, start)
        return self._cursors[name]

    def open_non_durable_cursor(self, name: str, start: Position | None,
                                initial: InitialPosition) -> MemoryCursor:
        cursor = MemoryCursor(name, self, 0 if initial == InitialPosition.EARLIEST
                              else len(self.entries))
        last = self.last_confirmed
        if (start is not None and last is not None
                and Position(start.ledger_id, start.entry_id - 1) <= last):
            cursor.place_at(start)
        return cursor

    async def read(self, positions: list[Position]) -> list[Entry]:
        return [self.entries[p.entry_id] for p in positions]

    async def find_first(self, matches: Callable[[Entry], bool]) -> Position | None:
        return next((e.position for e in self.entries if matches(e)), None)

    async def delete_cursor(self, name: str) -> None:
        self._cursors.pop(name, None)

    def cursors(self) -> dict[str, MemoryCursor]:
        return dict(self._cursors)

    async def close(self) -> None:
        pass

    async def delete(self) -> None:
        self.entries.clear()
        self._cursors.clear()
