"""The bookie's ledgers: their state in memory, every change journaled first.

Each operation checks the request against the ledger's state, appends its journal record
and applies the change at once, so that the next request on any connection sees it (an
add of entry 5 is accepted right after entry 4's, before 4 is fsynced). It returns the
journal offset its caller must see durable before answering. Replaying the journal
through the same `_apply` rebuilds exactly this state after a restart.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from impl.bookie.journal import Journal, Record, RecordKind
from impl.bookie.protocol import ReadEntry, RequestFailed, Status

_ENTRY_ID = struct.Struct(">Q")
_LAST_ENTRY = struct.Struct(">q")
JOURNAL_FILE = "journal.log"


@dataclass
class LedgerState:
    ledger_id: int
    locations: list[tuple[int, int]] = field(default_factory=list)
    """Entry id i is at journal offset locations[i][0], locations[i][1] bytes long."""
    fenced: bool = False
    closed_at: int | None = None
    """The last entry id the writer closed the ledger with; None while open."""

    @property
    def last_entry_id(self) -> int:
        """-1 when the ledger has no entry."""
        visible = len(self.locations) - 1
        return visible if self.closed_at is None else min(visible, self.closed_at)


class LedgerStore:
    def __init__(self, data_dir: Path, on_fatal: Callable[[BaseException], None]) -> None:
        self.ledgers: dict[int, LedgerState] = {}
        self.journal = Journal.replay(data_dir / JOURNAL_FILE, self._replay, on_fatal)

    # --- requests ----------------------------------------------------------------------

    def create(self, ledger_id: int) -> int:
        if ledger_id in self.ledgers:
            raise RequestFailed(Status.LEDGER_EXISTS, f"ledger {ledger_id} exists already")
        return self._record(RecordKind.CREATE, ledger_id)

    def add(self, ledger_id: int, entry_id: int, data: bytes) -> int:
        ledger = self._ledger(ledger_id)
        if ledger.fenced:
            raise RequestFailed(Status.FENCED, f"ledger {ledger_id} is fenced")
        if ledger.closed_at is not None:
            raise RequestFailed(Status.CLOSED, f"ledger {ledger_id} is closed")
        expected = len(ledger.locations)
        if entry_id != expected:
            raise RequestFailed(Status.BAD_ENTRY_ID,
                                f"ledger {ledger_id} expects entry {expected}, got {entry_id}")
        return self._record(RecordKind.ENTRY, ledger_id, _ENTRY_ID.pack(entry_id) + data)

    def read(self, ledger_id: int, first: int, last: int, budget: int) -> list[ReadEntry]:
        """Entries first..last (inclusive) that exist, stopping early rather than exceed
        `budget` bytes (at least one entry is always returned)."""
        ledger = self._ledger(ledger_id)
        if first < 0 or last < first:
            raise RequestFailed(Status.MALFORMED, f"bad entry range {first}..{last}")
        if first > ledger.last_entry_id:
            raise RequestFailed(Status.NO_SUCH_ENTRY, f"ledger {ledger_id} has no entry {first} "
                                f"(last entry {ledger.last_entry_id})")
        entries: list[ReadEntry] = []
        for entry_id in range(first, min(last, ledger.last_entry_id) + 1):
            offset, length = ledger.locations[entry_id]
            budget -= length
            if entries and budget < 0:
                break
            entries.append(ReadEntry(entry_id, self.journal.read(offset, length)))
        return entries

    def fence(self, ledger_id: int) -> tuple[int, int]:
        """(last entry id, journal end to wait for). Fencing twice is harmless: recovery
        by a second new owner must work too."""
        ledger = self._ledger(ledger_id)
        return ledger.last_entry_id, self._record(RecordKind.FENCE, ledger_id)

    def close(self, ledger_id: int, last_entry_id: int) -> int:
        ledger = self._ledger(ledger_id)
        if ledger.closed_at is not None:
            if ledger.closed_at == last_entry_id:
                return self.journal.end
            raise RequestFailed(Status.CLOSED, f"ledger {ledger_id} is closed at entry "
                                f"{ledger.closed_at}, not {last_entry_id}")
        if last_entry_id < -1 or last_entry_id > ledger.last_entry_id:
            raise RequestFailed(Status.BAD_ENTRY_ID, f"ledger {ledger_id} cannot close at "
                                f"{last_entry_id}: its last entry is {ledger.last_entry_id}")
        return self._record(RecordKind.CLOSE, ledger_id, _LAST_ENTRY.pack(last_entry_id))

    def delete(self, ledger_id: int) -> int:
        self._ledger(ledger_id)
        return self._record(RecordKind.DELETE, ledger_id)

    def last_entry_id(self, ledger_id: int) -> int:
        return self._ledger(ledger_id).last_entry_id

    # --- internals ---------------------------------------------------------------------

    def _ledger(self, ledger_id: int) -> LedgerState:
        try:
            return self.ledgers[ledger_id]
        except KeyError:
            raise RequestFailed(Status.NO_SUCH_LEDGER, f"no ledger {ledger_id}") from None

    def _record(self, kind: RecordKind, ledger_id: int, payload: bytes = b"") -> int:
        payload_offset, end = self.journal.append(kind, ledger_id, payload)
        self._apply(kind, ledger_id, payload, payload_offset)
        return end

    def _replay(self, record: Record) -> None:
        self._apply(record.kind, record.ledger_id, record.payload, record.payload_offset)

    def _apply(self, kind: RecordKind, ledger_id: int, payload: bytes, offset: int) -> None:
        if kind == RecordKind.CREATE:
            self.ledgers[ledger_id] = LedgerState(ledger_id)
            return
        ledger = self.ledgers.get(ledger_id)
        if ledger is None:
            return  # a record of a deleted ledger
        if kind == RecordKind.ENTRY:
            data_offset = offset + _ENTRY_ID.size
            ledger.locations.append((data_offset, len(payload) - _ENTRY_ID.size))
        elif kind == RecordKind.FENCE:
            ledger.fenced = True
        elif kind == RecordKind.CLOSE:
            (ledger.closed_at,) = _LAST_ENTRY.unpack(payload)
        elif kind == RecordKind.DELETE:
            del self.ledgers[ledger_id]
