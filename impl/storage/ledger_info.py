"""The managed ledger's metadata in ZooKeeper: where it lives and its JSON.

A managed ledger named `tenant/namespace/persistent/topic` lives at
`/managed-ledgers/tenant/namespace/persistent/topic` (each part percent-encoded, the same
node `impl/metadata/paths.managed_ledger` names, whose existence makes the topic exist);
its cursors are its children. Every write is a compare-and-set on the node's version, so
two owners can never both believe their write landed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from impl.metadata import paths
from impl.storage.api import Position


def managed_ledger_path(name: str) -> str:
    """The node of the managed ledger `name` (up to four '/'-separated parts; the last
    part may itself contain '/')."""
    parts = name.split("/", 3)
    return paths.MANAGED_LEDGERS + "".join(
        "/" + paths.encode(part, "managed ledger name part") for part in parts)


def cursor_path(ledger_name: str, cursor: str) -> str:
    return f"{managed_ledger_path(ledger_name)}/{paths.encode(cursor, 'cursor')}"


@dataclass(frozen=True)
class LedgerInfo:
    ledger_id: int
    bookies: tuple[str, ...]
    """The bookies holding the ledger (`host:port`); one today, see docs/storage.md."""
    last_entry_id: int | None = None
    """Set when the ledger is closed (-1 for an empty one); None while it is written."""

    def to_json(self) -> dict[str, Any]:
        return {"ledgerId": self.ledger_id, "bookies": list(self.bookies),
                "lastEntryId": self.last_entry_id}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LedgerInfo:
        return cls(int(data["ledgerId"]), tuple(data["bookies"]), data.get("lastEntryId"))


@dataclass(frozen=True)
class ManagedLedgerInfo:
    ledgers: tuple[LedgerInfo, ...] = ()
    """Oldest first; ledger ids only grow, so this is also position order."""
    terminated: bool = False
    last_position: Position | None = None
    """The last entry's position, recorded when the ledger is terminated."""

    def to_json(self) -> bytes:
        return orjson.dumps({
            "ledgers": [ledger.to_json() for ledger in self.ledgers],
            "terminated": self.terminated,
            "lastPosition": None if self.last_position is None else str(self.last_position),
        })

    @classmethod
    def from_json(cls, raw: bytes) -> ManagedLedgerInfo:
        if not raw:
            return cls()
        data = orjson.loads(raw)
        last = data.get("lastPosition")
        return cls(tuple(LedgerInfo.from_json(ledger) for ledger in data.get("ledgers", [])),
                   bool(data.get("terminated", False)),
                   None if last is None else Position.parse(last))


@dataclass(frozen=True)
class CursorInfo:
    mark_delete: Position
    individually_deleted: tuple[tuple[Position, Position], ...] = field(default=())
    """(exclusive start, inclusive end) ranges above mark-delete."""
    properties: tuple[tuple[str, int], ...] = field(default=())
    """Pulsar's cursor properties: named numbers stored with the cursor (a replicated
    subscription is marked by one, so the mark lives and dies with the subscription)."""

    def to_json(self) -> bytes:
        return orjson.dumps({
            "markDeletePosition": str(self.mark_delete),
            "individuallyDeletedMessages": [[str(start), str(end)]
                                            for start, end in self.individually_deleted],
            "properties": dict(self.properties),
        })

    @classmethod
    def from_json(cls, raw: bytes) -> CursorInfo:
        data = orjson.loads(raw)
        return cls(Position.parse(data["markDeletePosition"]),
                   tuple((Position.parse(start), Position.parse(end))
                         for start, end in data.get("individuallyDeletedMessages", [])),
                   tuple(sorted((str(k), int(v))
                                for k, v in (data.get("properties") or {}).items())))
