"""The bookie's wire protocol: length-prefixed binary frames over TCP (docs/storage.md).

Both ends import this module, so the byte layout is written down once. A frame is a
4-byte big-endian length followed by that many bytes. A request starts with its operation
code and a request id chosen by the client; the response repeats both and adds a status.
Many requests may be in flight on one connection: responses carry the request id because
an add answers only once it is durable, possibly after a later read has answered.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import IntEnum

MAX_FRAME = 16 * 1024 * 1024
"""Larger frames (or a length below the header) make the stream unparseable: the
connection is closed."""
READ_RESPONSE_BUDGET = 8 * 1024 * 1024
"""A read answers with fewer entries than asked rather than exceed this many bytes."""

FRAME_LENGTH = struct.Struct(">I")
REQUEST_HEADER = struct.Struct(">BQ")  # op, request id
RESPONSE_HEADER = struct.Struct(">BQB")  # op, request id, status
LEDGER = struct.Struct(">Q")
LEDGER_ENTRY = struct.Struct(">Qq")  # ledger id, entry id (or last entry id)
LEDGER_RANGE = struct.Struct(">QQQ")  # ledger id, first entry id, last entry id
ENTRY_ID = struct.Struct(">q")
ENTRY_COUNT = struct.Struct(">I")
ENTRY_HEADER = struct.Struct(">QI")  # entry id, data length


class Op(IntEnum):
    CREATE = 1
    """ledger id -> empty"""
    ADD = 2
    """ledger id, entry id, data -> entry id; answered once the entry is fsynced"""
    READ = 3
    """ledger id, first, last (inclusive) -> count, (entry id, length, data)*"""
    FENCE = 4
    """ledger id -> last entry id; every later add to the ledger fails with FENCED"""
    CLOSE = 5
    """ledger id, last entry id -> empty; later adds fail with CLOSED"""
    DELETE = 6
    """ledger id -> empty"""
    LAST_ENTRY = 7
    """ledger id -> last entry id, without fencing (only the no-fencing mutant uses it)"""
    AUTH = 8
    """token (UTF-8) -> empty. A bookie with authentication on takes it as the first
    request of a connection and refuses every other before it; one without takes it too"""


class Status(IntEnum):
    OK = 0
    MALFORMED = 1
    NO_SUCH_LEDGER = 2
    LEDGER_EXISTS = 3
    FENCED = 4
    CLOSED = 5
    BAD_ENTRY_ID = 6
    NO_SUCH_ENTRY = 7
    INTERNAL = 8
    NOT_AUTHORIZED = 9
    """no AUTH yet, or its token refused: the bookie closes the connection after saying so"""


class RequestFailed(Exception):
    """A request the bookie refuses; travels back as a non-OK status and a UTF-8 reason."""

    def __init__(self, status: Status, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass(frozen=True)
class ReadEntry:
    entry_id: int
    data: bytes


def frame(payload: bytes) -> bytes:
    return FRAME_LENGTH.pack(len(payload)) + payload


def request(op: Op, request_id: int, body: bytes) -> bytes:
    return frame(REQUEST_HEADER.pack(op, request_id) + body)


def response(op: int, request_id: int, status: Status, body: bytes = b"") -> bytes:
    return frame(RESPONSE_HEADER.pack(op, request_id, status) + body)


def encode_entries(entries: list[ReadEntry]) -> bytes:
    parts = [ENTRY_COUNT.pack(len(entries))]
    for entry in entries:
        parts.append(ENTRY_HEADER.pack(entry.entry_id, len(entry.data)))
        parts.append(entry.data)
    return b"".join(parts)


def decode_entries(body: bytes) -> list[ReadEntry]:
    (count,) = ENTRY_COUNT.unpack_from(body)
    offset = ENTRY_COUNT.size
    entries = []
    for _ in range(count):
        entry_id, length = ENTRY_HEADER.unpack_from(body, offset)
        offset += ENTRY_HEADER.size
        entries.append(ReadEntry(entry_id, body[offset : offset + length]))
        offset += length
    return entries
