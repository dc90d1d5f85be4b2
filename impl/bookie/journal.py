"""The bookie's journal: one append-only file holding every change, replayed on start.

Why one file: a single fsync then makes every concurrent add durable at once (group
commit), whatever ledgers they belong to. Records are appended to an in-memory buffer; a
syncer task writes the buffer and fsyncs it in a worker thread, and whoever waits for
durability (`wait_durable`) is woken once the fsync covering their record returns. Adds
that arrive during an fsync form the next batch.

Record layout (big-endian): u32 body length, u32 CRC-32C of the body, body; the body is
u8 kind, u64 ledger id, then the kind's payload. A record cut short or failing its CRC at
the end of the file is a torn write of a crash and is dropped on replay (the file is
truncated there); the bytes after it were never acknowledged.
"""

from __future__ import annotations

import asyncio
import logging
import os
import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path

import google_crc32c

log = logging.getLogger(__name__)

RECORD_HEADER = struct.Struct(">II")  # body length, CRC-32C of the body
BODY_HEADER = struct.Struct(">BQ")  # kind, ledger id
_REPLAY_CHUNK = 1024 * 1024


class RecordKind(IntEnum):
    CREATE = 1
    ENTRY = 2
    """payload: u64 entry id, then the entry's data"""
    FENCE = 3
    CLOSE = 4
    """payload: i64 last entry id"""
    DELETE = 5


@dataclass(frozen=True)
class Record:
    kind: RecordKind
    ledger_id: int
    payload: bytes
    payload_offset: int
    """Where the payload starts in the file, so entries can be read back without a copy
    kept in memory."""


class Journal:
    """Open with `Journal.replay(path)`, which also yields the surviving records."""

    def __init__(self, path: Path, fd: int, size: int,
                 on_fatal: Callable[[BaseException], None]) -> None:
        self.path = path
        self._fd = fd
        self._on_fatal = on_fatal
        self._durable = size
        """Bytes [0, durable) are on disk and fsynced."""
        self._writing: tuple[int, bytearray] | None = None
        """The batch being written and fsynced now: its file offset and bytes."""
        self._buffer_base = size
        self._buffer = bytearray()
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []
        self._wake: asyncio.Event | None = None
        self._syncer: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None

    @classmethod
    def replay(cls, path: Path, apply: Callable[[Record], None],
               on_fatal: Callable[[BaseException], None]) -> Journal:
        """The journal at `path` (created if missing), after passing each surviving
        record to `apply` in order; a torn tail is truncated away first. `on_fatal` hears
        a failed write or fsync, after which the journal accepts nothing."""
        path.parent.mkdir(parents=True, exist_ok=True)
        good_size = _scan(path, apply)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        if os.fstat(fd).st_size != good_size:
            log.warning("journal %s: dropping a torn tail after byte %d", path, good_size)
            os.ftruncate(fd, good_size)
            os.fsync(fd)
        return cls(path, fd, good_size, on_fatal)

    @property
    def end(self) -> int:
        """The offset just past the last appended record."""
        return self._buffer_base + len(self._buffer)

    def append(self, kind: RecordKind, ledger_id: int, payload: bytes = b"") -> tuple[int, int]:
        """Buffer a record; returns (offset of its payload, end of the record). Not
        durable until `wait_durable(end)` returns."""
        body = BODY_HEADER.pack(kind, ledger_id) + payload
        start = self.end
        self._buffer += RECORD_HEADER.pack(len(body), google_crc32c.value(body))
        self._buffer += body
        return start + RECORD_HEADER.size + BODY_HEADER.size, self.end

    def read(self, offset: int, length: int) -> bytes:
        """Bytes of an appended record, durable or still buffered."""
        if offset >= self._buffer_base:
            start = offset - self._buffer_base
            return bytes(self._buffer[start : start + length])
        if self._writing is not None and offset >= self._writing[0]:
            start = offset - self._writing[0]
            return bytes(self._writing[1][start : start + length])
        return os.pread(self._fd, length, offset)

    async def wait_durable(self, end: int | None = None) -> None:
        """Return once every record up to `end` (default: all appended) is fsynced."""
        target = self.end if end is None else end
        if target <= self._durable:
            return
        if self._failure is not None:
            raise self._failure
        if self._syncer is None:
            self._wake = asyncio.Event()
            self._syncer = asyncio.create_task(self._sync_loop(), name="journal-syncer")
        assert self._wake is not None
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((target, future))
        self._wake.set()
        await future

    async def _sync_loop(self) -> None:
        assert self._wake is not None
        loop = asyncio.get_running_loop()
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._waiters and self._buffer:
                base, batch = self._buffer_base, self._buffer
                self._writing = (base, batch)
                self._buffer_base, self._buffer = base + len(batch), bytearray()
                try:
                    await loop.run_in_executor(None, self._write_and_sync, base, batch)
                except BaseException as exc:  # a bookie that cannot fsync must stop
                    self._failure = exc
                    self._fail_waiters(exc)
                    self._on_fatal(exc)
                    return
                self._durable = base + len(batch)
                self._writing = None
                self._release_waiters()
            self._release_waiters()

    def _write_and_sync(self, base: int, batch: bytearray) -> None:
        view = memoryview(batch)
        while view:
            written = os.pwrite(self._fd, view, base)
            view, base = view[written:], base + written
        os.fsync(self._fd)

    def _release_waiters(self) -> None:
        pending = []
        for target, future in self._waiters:
            if target <= self._durable:
                if not future.done():
                    future.set_result(None)
            else:
                pending.append((target, future))
        self._waiters = pending

    def _fail_waiters(self, exc: BaseException) -> None:
        for _, future in self._waiters:
            if not future.done():
                future.set_exception(exc)
        self._waiters = []

    async def close(self) -> None:
        """Make everything appended durable (unless writing failed), then release the
        file."""
        try:
            if self._failure is None:
                await self.wait_durable()
        finally:
            if self._syncer is not None:
                self._syncer.cancel()
            os.close(self._fd)


def _scan(path: Path, apply: Callable[[Record], None]) -> int:
    """Apply every complete, intact record; the size they occupy."""
    offset = 0
    try:
        file = path.open("rb", buffering=_REPLAY_CHUNK)
    except FileNotFoundError:
        return 0
    with file:
        for record, end in _records(file.read, offset):
            apply(record)
            offset = end
    return offset


def _records(read: Callable[[int], bytes], offset: int) -> Iterator[tuple[Record, int]]:
    while True:
        header = read(RECORD_HEADER.size)
        if len(header) < RECORD_HEADER.size:
            return
        length, crc = RECORD_HEADER.unpack(header)
        body = read(length)
        if len(body) < length or length < BODY_HEADER.size or google_crc32c.value(body) != crc:
            return
        kind, ledger_id = BODY_HEADER.unpack_from(body)
        try:
            record_kind = RecordKind(kind)
        except ValueError:
            return
        payload_offset = offset + RECORD_HEADER.size + BODY_HEADER.size
        offset += RECORD_HEADER.size + length
        yield Record(record_kind, ledger_id, body[BODY_HEADER.size :], payload_offset), offset
