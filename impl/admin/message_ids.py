"""Message ids in admin bodies, in Pulsar's JSON shapes: `MessageIdImpl` answers
(`{"ledgerId", "entryId", "partitionIndex"}`) and `ResetCursorData` requests, which add
`isExcluded` (start after the message rather than at it)."""

from __future__ import annotations

from typing import Any

from impl.storage.api import Position

EARLIEST = Position(-1, -1)
"""Pulsar's MessageId.earliest; what a subscription created without a body starts at."""
NOT_PARTITIONED = -1


def requested_position(body: Any) -> Position:
    """Where a `ResetCursorData` (or bare `MessageIdImpl`) body says to start reading."""
    if not isinstance(body, dict) or not all(
            isinstance(body.get(key), int) and not isinstance(body.get(key), bool)
            for key in ("ledgerId", "entryId")):
        raise ValueError('a message id body needs whole numbers "ledgerId" and "entryId"')
    position = Position(body["ledgerId"], body["entryId"])
    if body.get("isExcluded") is True:
        return Position(position.ledger_id, position.entry_id + 1)
    return position


def message_id_json(position: Position, batch_index: int = -1) -> dict[str, Any]:
    """A `MessageIdImpl`; `batchIndex` (-1 outside a batch) as a batch message id has it."""
    return {"ledgerId": position.ledger_id, "entryId": position.entry_id,
            "partitionIndex": NOT_PARTITIONED, "batchIndex": batch_index}
