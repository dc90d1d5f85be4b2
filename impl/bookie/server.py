"""The bookie's TCP server: parses requests, runs them against the ledger store, answers
once the change is durable.

Per connection, requests are parsed and applied in arrival order (so pipelined adds keep
their order), and each one's answer is sent when its journal record is fsynced; answers
can therefore overtake one another and carry the request id. A request that parses as a
frame but not as its operation gets a MALFORMED answer; a stream that is not even frames
(an absurd length) closes that connection only.

With authentication on (`BookieConfig.token_secret`), a connection's first request must be
AUTH with a token signed with that key whose role is one of `client_roles` (the brokers'):
any other request, or a token refused, is answered NOT_AUTHORIZED and the connection
closed, so only brokers read, write or fence ledgers (docs/security.md).
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import ClassVar

from impl.bookie import protocol
from impl.bookie.ledgers import LedgerStore
from impl.bookie.protocol import Op, RequestFailed, Status
from impl.mutants import NONE, Mutants
from wire.tokens import InvalidToken, verify

log = logging.getLogger(__name__)

LAZY_SYNC_INTERVAL = 5.0
"""`ack-before-durable`: how long acknowledged adds may sit in memory before a sync."""

Answer = Callable[[], Awaitable[bytes]]


@dataclass(frozen=True)
class BookieConfig:
    host: str
    port: int
    ack_before_durable: bool = False
    token_secret: bytes | None = None
    """The key tokens are signed with; None: authentication off, anyone may connect."""
    client_roles: frozenset[str] = frozenset()
    """The roles whose tokens are taken (the brokers')."""

    def refusal(self, token: bytes) -> str | None:
        """Why AUTH with `token` is refused; None when it is taken."""
        if self.token_secret is None:
            return None
        try:
            role = verify(self.token_secret, token.decode("utf-8", errors="replace"))
        except InvalidToken as exc:
            return f"invalid token: {exc}"
        if role not in self.client_roles:
            return f"role {role!r} may not use this bookie"
        return None


class BookieServer:
    def __init__(self, ledgers: LedgerStore, config: BookieConfig, mutants: Mutants = NONE) -> None:
        self.ledgers = ledgers
        self.config = config
        # Mutant `ack-before-durable` (ledger store contract: an entry id is returned only
        # once the entry is fsynced): adds are answered from the journal's memory buffer
        # and written only with a later batch, so a crash loses acknowledged entries.
        self._ack_before_durable = mutants.on("ack-before-durable")
        self._server: asyncio.Server | None = None
        self._lazy_sync: asyncio.Task[None] | None = None
        self._connections: dict[asyncio.Task[None], asyncio.StreamWriter] = {}
        self._answers: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve_connection, self.config.host,
                                                  self.config.port)
        if self._ack_before_durable:
            self._lazy_sync = asyncio.create_task(self._sync_lazily())
        log.info("bookie serving on %s:%d", self.config.host, self.config.port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in self._connections.values():
            writer.close()
        await asyncio.gather(*self._connections, *self._answers, return_exceptions=True)
        if self._lazy_sync is not None:
            self._lazy_sync.cancel()
        await self.ledgers.journal.close()

    async def _sync_lazily(self) -> None:
        while True:
            await asyncio.sleep(LAZY_SYNC_INTERVAL)
            await self.ledgers.journal.wait_durable()

    # --- connections -------------------------------------------------------------------

    async def _serve_connection(self, reader: asyncio.StreamReader,
                                writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections[task] = writer
        peer = writer.get_extra_info("peername")
        authenticated = self.config.token_secret is None
        try:
            while True:
                payload = await _read_frame(reader)
                if payload is None:
                    log.warning("closing connection from %s: not a frame stream", peer)
                    return
                op, request_id = protocol.REQUEST_HEADER.unpack_from(payload)
                body = payload[protocol.REQUEST_HEADER.size :]
                if op == Op.AUTH or not authenticated:
                    refusal = (self.config.refusal(body) if op == Op.AUTH
                               else f"{_op_name(op)} before AUTH")
                    if refusal is not None:
                        log.warning("closing connection from %s: %s", peer, refusal)
                        await self._send(writer, op, request_id,
                                         RequestFailed(Status.NOT_AUTHORIZED, refusal))
                        return
                    authenticated = True
                    await self._send(writer, op, request_id, _now(b""))
                    continue
                answer = self._handle(op, body)
                sending = asyncio.create_task(self._send(writer, op, request_id, answer))
                self._answers.add(sending)
                sending.add_done_callback(self._answers.discard)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client went away
        finally:
            self._connections.pop(task, None)
            writer.close()

    async def _send(self, writer: asyncio.StreamWriter, op: int, request_id: int,
                    answer: Answer | RequestFailed) -> None:
        if isinstance(answer, RequestFailed):
            status, body = answer.status, answer.reason.encode()
        else:
            try:
                status, body = Status.OK, await answer()
            except RequestFailed as failed:
                status, body = failed.status, failed.reason.encode()
        if not writer.is_closing():
            writer.write(protocol.response(op, request_id, status, body))

    # --- requests ----------------------------------------------------------------------

    def _handle(self, op: int, body: bytes) -> Answer | RequestFailed:
        """Apply the request now; what is returned produces the answer once durable."""
        try:
            handler = self._handlers[Op(op)]
        except ValueError:
            return RequestFailed(Status.MALFORMED, f"unknown operation {op}")
        try:
            return handler(self, body)
        except RequestFailed as failed:
            return failed
        except Exception as exc:  # struct.error and friends: the body does not parse
            return RequestFailed(Status.MALFORMED, f"{Op(op).name}: {exc}")

    def _durable(self, end: int, body: bytes = b"") -> Answer:
        async def answer() -> bytes:
            await self.ledgers.journal.wait_durable(end)
            return body
        return answer

    def _create(self, body: bytes) -> Answer:
        (ledger_id,) = _exact(protocol.LEDGER, body)
        return self._durable(self.ledgers.create(ledger_id))

    def _add(self, body: bytes) -> Answer:
        ledger_id, entry_id = protocol.LEDGER_ENTRY.unpack_from(body)
        data = body[protocol.LEDGER_ENTRY.size :]
        end = self.ledgers.add(ledger_id, entry_id, data)
        answer = protocol.ENTRY_ID.pack(entry_id)
        if self._ack_before_durable:
            return _now(answer)
        return self._durable(end, answer)

    def _read(self, body: bytes) -> Answer:
        ledger_id, first, last = _exact(protocol.LEDGER_RANGE, body)
        entries = self.ledgers.read(ledger_id, first, last, protocol.READ_RESPONSE_BUDGET)
        return _now(protocol.encode_entries(entries))

    def _fence(self, body: bytes) -> Answer:
        (ledger_id,) = _exact(protocol.LEDGER, body)
        last, end = self.ledgers.fence(ledger_id)
        return self._durable(end, protocol.ENTRY_ID.pack(last))

    def _close(self, body: bytes) -> Answer:
        ledger_id, last = _exact(protocol.LEDGER_ENTRY, body)
        return self._durable(self.ledgers.close(ledger_id, last))

    def _delete(self, body: bytes) -> Answer:
        (ledger_id,) = _exact(protocol.LEDGER, body)
        return self._durable(self.ledgers.delete(ledger_id))

    def _last_entry(self, body: bytes) -> Answer:
        (ledger_id,) = _exact(protocol.LEDGER, body)
        return _now(protocol.ENTRY_ID.pack(self.ledgers.last_entry_id(ledger_id)))

    _handlers: ClassVar[dict[Op, Callable[[BookieServer, bytes], Answer]]] = {
        Op.CREATE: _create,
        Op.ADD: _add,
        Op.READ: _read,
        Op.FENCE: _fence,
        Op.CLOSE: _close,
        Op.DELETE: _delete,
        Op.LAST_ENTRY: _last_entry,
    }


def _op_name(op: int) -> str:
    return Op(op).name if op in Op.__members__.values() else f"operation {op}"


def _exact(layout: struct.Struct, body: bytes) -> tuple[int, ...]:
    if len(body) != layout.size:
        raise RequestFailed(Status.MALFORMED, f"expected {layout.size} bytes, got {len(body)}")
    return tuple(layout.unpack(body))


def _now(body: bytes) -> Answer:
    async def answer() -> bytes:
        return body
    return answer


async def _read_frame(reader: asyncio.StreamReader) -> bytes | None:
    """The next frame's payload; None when the length cannot be a request."""
    (length,) = protocol.FRAME_LENGTH.unpack(await reader.readexactly(protocol.FRAME_LENGTH.size))
    if length < protocol.REQUEST_HEADER.size or length > protocol.MAX_FRAME:
        return None
    return await reader.readexactly(length)
