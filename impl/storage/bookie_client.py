"""The asyncio client of the bookie protocol (impl/bookie/protocol.py).

One connection per bookie, opened on first use and again after it broke. Requests are
pipelined: each gets a request id and a future, and a reader task matches answers to
futures, so many adds can wait for their fsync at once (and share it). A broken
connection or an answer later than `request_timeout` fails the request with
`BookieUnavailable`: its outcome is unknown.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging

from impl.bookie import protocol
from impl.bookie.protocol import Op, ReadEntry, Status
from impl.storage import errors

log = logging.getLogger(__name__)

_ERRORS: dict[Status, type[errors.BookieError]] = {
    Status.MALFORMED: errors.MalformedRequest,
    Status.NO_SUCH_LEDGER: errors.NoSuchLedger,
    Status.LEDGER_EXISTS: errors.LedgerExists,
    Status.FENCED: errors.LedgerFenced,
    Status.CLOSED: errors.LedgerClosed,
    Status.BAD_ENTRY_ID: errors.BadEntryId,
    Status.NO_SUCH_ENTRY: errors.NoSuchEntry,
    Status.INTERNAL: errors.BookieInternalError,
    Status.NOT_AUTHORIZED: errors.BookieNotAuthorized,
}


class BookieClient:
    """The connection to one bookie at `host:port`."""

    def __init__(self, address: str, *, connect_timeout: float = 5.0,
                 request_timeout: float = 15.0, token: str | None = None) -> None:
        self.address = address
        self._token = token
        """Presented (AUTH) first on every connection, for a bookie with authentication
        on; None: nothing presented."""
        self._connect_timeout = connect_timeout
        self._request_timeout = request_timeout
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[tuple[Status, bytes]]] = {}
        self._writer: asyncio.StreamWriter | None = None
        self._reader_task: asyncio.Task[None] | None = None
        self._connecting = asyncio.Lock()

    # --- operations --------------------------------------------------------------------

    async def create(self, ledger_id: int) -> None:
        await self._call(Op.CREATE, protocol.LEDGER.pack(ledger_id))

    async def add(self, ledger_id: int, entry_id: int, data: bytes) -> None:
        """Returns once the bookie has fsynced the entry."""
        await self._call(Op.ADD, protocol.LEDGER_ENTRY.pack(ledger_id, entry_id) + data)

    async def read(self, ledger_id: int, first: int, last: int) -> list[ReadEntry]:
        """Entries first..last; possibly fewer (a byte budget per answer), never none."""
        body = await self._call(Op.READ, protocol.LEDGER_RANGE.pack(ledger_id, first, last))
        return protocol.decode_entries(body)

    async def fence(self, ledger_id: int) -> int:
        """Fence the ledger; its last entry id (-1 when empty)."""
        return _entry_id(await self._call(Op.FENCE, protocol.LEDGER.pack(ledger_id)))

    async def close_ledger(self, ledger_id: int, last_entry_id: int) -> None:
        await self._call(Op.CLOSE, protocol.LEDGER_ENTRY.pack(ledger_id, last_entry_id))

    async def delete(self, ledger_id: int) -> None:
        await self._call(Op.DELETE, protocol.LEDGER.pack(ledger_id))

    async def last_entry_id(self, ledger_id: int) -> int:
        """The ledger's last entry id without fencing it."""
        return _entry_id(await self._call(Op.LAST_ENTRY, protocol.LEDGER.pack(ledger_id)))

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        if self._reader_task is not None:
            self._reader_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader_task
        self._fail_pending("client closed")

    # --- plumbing ----------------------------------------------------------------------

    async def _call(self, op: Op, body: bytes) -> bytes:
        return await self._request(await self._connection(), op, body)

    async def _request(self, writer: asyncio.StreamWriter, op: Op, body: bytes) -> bytes:
        request_id = next(self._ids)
        future: asyncio.Future[tuple[Status, bytes]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = future
        try:
            writer.write(protocol.request(op, request_id, body))
            async with asyncio.timeout(self._request_timeout):
                status, answer = await future
        except TimeoutError:
            raise errors.BookieUnavailable(
                self.address, f"no answer to {op.name} within {self._request_timeout} s"
            ) from None
        finally:
            self._pending.pop(request_id, None)
        if status != Status.OK:
            error = _ERRORS.get(status, errors.BookieInternalError)
            raise error(self.address, answer.decode(errors="replace"))
        return answer

    async def _connection(self) -> asyncio.StreamWriter:
        async with self._connecting:
            if self._writer is not None and not self._writer.is_closing():
                return self._writer
            host, _, port = self.address.rpartition(":")
            try:
                async with asyncio.timeout(self._connect_timeout):
                    reader, writer = await asyncio.open_connection(host, int(port))
            except (OSError, TimeoutError) as exc:
                raise errors.BookieUnavailable(self.address, f"cannot connect: {exc!r}") from None
            self._reader_task = asyncio.create_task(self._read_answers(reader, writer))
            if self._token is not None:
                # Before any other request can be written on this connection.
                try:
                    await self._request(writer, Op.AUTH, self._token.encode())
                except errors.BookieError:
                    writer.close()
                    raise
            self._writer = writer
            return writer

    async def _read_answers(self, reader: asyncio.StreamReader,
                            writer: asyncio.StreamWriter) -> None:
        reason = "connection closed by the bookie"
        try:
            while True:
                (length,) = protocol.FRAME_LENGTH.unpack(
                    await reader.readexactly(protocol.FRAME_LENGTH.size))
                payload = await reader.readexactly(length)
                _, request_id, status = protocol.RESPONSE_HEADER.unpack_from(payload)
                future = self._pending.get(request_id)
                if future is not None and not future.done():
                    known = status in Status._value2member_map_
                    future.set_result((Status(status) if known else Status.INTERNAL,
                                       payload[protocol.RESPONSE_HEADER.size :]))
        except (asyncio.IncompleteReadError, ConnectionError) as exc:
            reason = f"connection lost: {exc!r}"
        finally:
            writer.close()
            if self._writer is writer:
                self._writer = None
            self._fail_pending(reason)

    def _fail_pending(self, reason: str) -> None:
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(errors.BookieUnavailable(self.address, reason))


def _entry_id(body: bytes) -> int:
    (entry_id,) = protocol.ENTRY_ID.unpack(body)
    return int(entry_id)


class BookiePool:
    """One `BookieClient` per bookie address, shared by every managed ledger of a broker."""

    def __init__(self, *, connect_timeout: float = 5.0, request_timeout: float = 15.0,
                 token: str | None = None) -> None:
        self._clients: dict[str, BookieClient] = {}
        self._connect_timeout = connect_timeout
        self._request_timeout = request_timeout
        self._token = token

    def client(self, address: str) -> BookieClient:
        if address not in self._clients:
            self._clients[address] = BookieClient(address, connect_timeout=self._connect_timeout,
                                                  request_timeout=self._request_timeout,
                                                  token=self._token)
        return self._clients[address]

    async def close(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()
