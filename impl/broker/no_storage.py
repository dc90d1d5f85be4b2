"""What a non-persistent topic has in place of a managed ledger and cursors: nothing kept.

`Topic` and `Subscription` reach storage through these two interfaces; giving them
stand-ins that hold nothing lets a non-persistent topic (impl/broker/non_persistent.py)
reuse the producer, subscription and consumer bookkeeping while never opening a ledger.
Every read finds nothing, every acknowledgement changes nothing, there is never a backlog.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from impl.storage.api import Entry, InitialPosition, ManagedCursor, Position
from impl.storage.ledger_info import CursorInfo

NOWHERE = Position(-1, -1)


class NoCursor:
    def __init__(self, name: str) -> None:
        self.name = name
        self.mark_delete_position = NOWHERE
        self.read_position = NOWHERE
        self.individually_deleted: list[tuple[Position, Position]] = []
        self.properties: dict[str, int] = {}
        self.persisted = CursorInfo(NOWHERE)

    async def put_property(self, name: str, value: int) -> None:
        pass

    async def read_entries(self, max_entries: int) -> list[Entry]:
        return []

    def has_more(self) -> bool:
        return False

    async def wait_for_more(self) -> None:
        pass

    def rewind(self) -> None:
        pass

    async def read_positions(self, positions: list[Position]) -> list[Entry]:
        return []

    async def reset(self, read_from: Position) -> None:
        pass

    async def mark_delete(self, position: Position,
                          properties: dict[str, int] | None = None) -> None:
        pass

    async def delete(self, positions: list[Position]) -> None:
        pass

    async def flush(self) -> None:
        pass

    def backlog(self) -> int:
        return 0

    def unacknowledged(self) -> Iterator[Position]:
        return iter(())


class NoLedger:
    def __init__(self, name: str) -> None:
        self.name = name
        self.last_confirmed: Position | None = None
        self.terminated = False

    async def add_entry(self, data: bytes) -> Position:
        raise NotImplementedError("a non-persistent topic stores nothing")

    async def terminate(self) -> Position | None:
        return None

    async def open_cursor(self, name: str, initial: InitialPosition) -> ManagedCursor:
        return NoCursor(name)

    def open_non_durable_cursor(self, name: str, start: Position | None,
                                initial: InitialPosition) -> ManagedCursor:
        return NoCursor(name)

    async def read(self, positions: list[Position]) -> list[Entry]:
        return []

    async def find_first(self, matches: Callable[[Entry], bool]) -> Position | None:
        return None

    async def delete_cursor(self, name: str) -> None:
        pass

    def cursors(self) -> dict[str, ManagedCursor]:
        return {}

    async def close(self) -> None:
        pass

    async def delete(self) -> None:
        pass
