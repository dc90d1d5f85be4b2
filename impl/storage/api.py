"""The contract between the broker's protocol front end and topic storage.

The broker front end (impl/broker) only ever sees these types; the managed ledger
(impl/storage/managed_ledger.py) implements them over bookies and ZooKeeper. Keeping the
contract in one small module lets either side be read, tested and replaced alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from impl.storage.ledger_info import CursorInfo


@dataclass(frozen=True, order=True)
class Position:
    """A message's place in a topic: `ledgerId:entryId`, ordered as Pulsar orders them."""

    ledger_id: int
    entry_id: int

    def __str__(self) -> str:
        return f"{self.ledger_id}:{self.entry_id}"

    @classmethod
    def parse(cls, text: str) -> Position:
        ledger, _, entry = text.partition(":")
        return cls(int(ledger), int(entry))


@dataclass(frozen=True)
class Entry:
    """One stored entry: a whole SEND payload (metadata and, for batches, every message)."""

    position: Position
    data: bytes


class InitialPosition(Enum):
    LATEST = 0
    EARLIEST = 1


class StorageError(Exception):
    """Base of the storage errors the front end maps onto protocol errors."""


class TopicTerminated(StorageError):
    """The topic was terminated: every later add fails (Pulsar's TopicTerminatedError)."""


class OwnershipLost(StorageError):
    """Our ledger was fenced by a newer owner: this broker must not acknowledge the write."""


class ManagedCursor(Protocol):
    """A durable subscription position: mark-delete plus individually deleted ranges.

    Reads go forward from the read position; acknowledgements never move it backwards.
    """

    name: str

    @property
    def mark_delete_position(self) -> Position: ...

    @property
    def individually_deleted(self) -> list[tuple[Position, Position]]:
        """Acknowledged ranges above mark-delete, as (exclusive start, inclusive end) pairs,
        the way Pulsar's stats print `individuallyDeletedMessages`."""
        ...

    @property
    def persisted(self) -> CursorInfo:
        """The state as last written: what a new owner would find. Acknowledgements apply
        in memory first, so this trails the two above while a write is under way, and for
        as long as the metadata store is out of reach."""
        ...

    @property
    def read_position(self) -> Position: ...

    @property
    def properties(self) -> dict[str, int]:
        """Named numbers stored with the cursor (Pulsar's cursor properties)."""
        ...

    async def put_property(self, name: str, value: int) -> None:
        """Set a property; persisted when this returns."""
        ...

    async def read_entries(self, max_entries: int) -> list[Entry]:
        """Entries from the read position onward that are not yet acknowledged; advances the
        read position past what it returns. Empty when caught up."""
        ...

    def has_more(self) -> bool:
        """Whether an unacknowledged entry exists at or after the read position."""
        ...

    async def wait_for_more(self) -> None:
        """Return once an entry exists past the read position, or the topic is terminated
        or closed meanwhile; on a topic already terminated, only when it closes."""
        ...

    def rewind(self) -> None:
        """Move the read position back to the first unacknowledged entry (redelivery)."""
        ...

    async def read_positions(self, positions: list[Position]) -> list[Entry]:
        """The given entries, for redelivering specific messages; acknowledged ones skipped."""
        ...

    async def reset(self, read_from: Position) -> None:
        """Start over at `read_from` (Pulsar's resetCursor, what SEEK does): mark-delete
        moves, backwards or forwards, to just before it, every individual acknowledgement
        is forgotten, and the next read returns the entry at `read_from` or the first one
        after it. A ledger id below 0 (the earliest message id) means the first entry; a
        position past the last entry, the next entry to be added. Persisted when durable."""
        ...

    async def mark_delete(self, position: Position,
                          properties: dict[str, int] | None = None) -> None:
        """Cumulative acknowledgement of everything at or before position; persisted.
        `properties`, when given, replace the cursor's properties in the same write
        (Pulsar's markDelete with properties): a snapshot and the position it holds
        for can never be read apart."""
        ...

    async def delete(self, positions: list[Position]) -> None:
        """Individual acknowledgement; persisted; mark-delete advances over closed gaps."""
        ...

    async def flush(self) -> None:
        """Persist what is acknowledged in memory and not yet written; returns at once when
        nothing is. An acknowledgement whose write failed stays applied in memory, so its
        retry finds nothing new to apply: the retry must still wait for this before it is
        answered, or the answer promises what a new owner would not find."""
        ...

    def backlog(self) -> int:
        """Entries not yet acknowledged."""
        ...

    def unacknowledged(self) -> Iterator[Position]:
        """The entries not yet acknowledged, oldest first, lazily (the admin API's peek,
        skip and expiry count along it). Consume it before the next await."""
        ...


class ManagedLedger(Protocol):
    """One topic's log. Opening it as a new owner fences the previous owner's ledger."""

    name: str

    @property
    def last_confirmed(self) -> Position | None: ...

    @property
    def terminated(self) -> bool: ...

    async def add_entry(self, data: bytes) -> Position:
        """Durably append; returns only after the bookie has fsynced the entry.

        Raises TopicTerminated after termination and OwnershipLost once fenced.
        """
        ...

    async def terminate(self) -> Position | None:
        """Persistently terminate; returns the last position."""
        ...

    async def open_cursor(self, name: str, initial: InitialPosition) -> ManagedCursor:
        """Open (or create, at `initial`) the named durable cursor."""
        ...

    def open_non_durable_cursor(self, name: str, start: Position | None,
                                initial: InitialPosition) -> ManagedCursor:
        """A cursor in memory only, for a reader: nothing of it is persisted, it is not among
        `cursors()` (so it holds nothing back and leaves nothing behind), and it ends with
        its subscription. Its first read is the entry at `start` (a message id; a ledger
        id below 0 names the earliest), or at `initial` when `start` is None or lies
        beyond the last entry (Pulsar's NonDurableCursorImpl)."""
        ...

    async def read(self, positions: list[Position]) -> list[Entry]:
        """The entries at `positions` (which must exist), in the order given, whatever
        any cursor acknowledged."""
        ...

    async def find_first(self, matches: Callable[[Entry], bool]) -> Position | None:
        """The first entry that `matches`, searched in halves on the assumption that every
        entry after a match matches too (publish times, as Pulsar's message finder
        assumes); None when none does."""
        ...

    async def delete_cursor(self, name: str) -> None: ...

    def cursors(self) -> dict[str, ManagedCursor]: ...

    async def close(self) -> None:
        """Release in-memory state; does not terminate or delete anything."""
        ...

    async def delete(self) -> None:
        """Delete the topic's ledgers, cursors and metadata."""
        ...
