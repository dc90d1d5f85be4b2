"""The replicator's producer on a remote cluster, over the project's asyncio client
connection (`impl/client/connection.py`: CONNECT, LOOKUP with redirects, requests by id).

The replicator sends stored entries as they are (their metadata already says where they
come from), so this producer never batches or re-encodes: one SEND per entry, receipts
matched by sequence id. A broken connection, a CLOSE_PRODUCER from the remote broker (its
topic moved) or a refused send fails every send in flight with `RemoteUnavailable` and
resolves `lost`; the replicator then rewinds and connects again.
"""

from __future__ import annotations

import asyncio
import itertools

from impl.storage.api import Position
from wire.connection import ClientConnection, ConnectionPool, service_urls
from wire.errors import ClientError
from wire.frames import Frame, split_entry
from wire.pulsar_api_pb2 import (
    BaseCommand,
    CommandCloseProducer,
    CommandProducer,
    CommandSend,
    ServerError,
)

_KINDS = (BaseCommand.SEND_RECEIPT, BaseCommand.SEND_ERROR, BaseCommand.CLOSE_PRODUCER)


class RemoteUnavailable(Exception):
    """The remote cluster cannot take our entries now (unreachable, topic moving, refused);
    the message says which cluster and why."""


class RemoteProducer:
    """A producer named `name` on `topic` of the cluster that `service_url` reaches.

    `await RemoteProducer.connect(...)` looks the topic up (following redirects) and
    creates the producer; `send(entry)` returns a future that resolves to the entry's
    position in the remote cluster, or fails with `RemoteUnavailable`."""

    def __init__(self, pool: ConnectionPool, connection: ClientConnection,
                 producer_id: int) -> None:
        self._pool = pool
        self._connection = connection
        self._producer_id = producer_id
        self._sequence_ids = itertools.count()
        self._receipts: dict[int, asyncio.Future[Position]] = {}
        self.lost: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        """Resolves, with the reason, once the producer can send no more."""
        connection.register(_KINDS, producer_id, self._handle,
                            lambda: self._fail("connection lost"))

    @classmethod
    async def connect(cls, service_url: str, topic: str, name: str,
                      timeout: float = 10.0, keepalive: float | None = None,
                      token: str | None = None) -> RemoteProducer:
        """`service_url` may name several brokers (`pulsar://h1:6650,h2:6650`): each is
        tried in turn, as Pulsar's replicator client tries them. `token`: what the
        CONNECT presents (the broker's client token), None nothing;
        a remote that refuses it raises RemoteUnavailable naming `AuthenticationError`."""
        pool = ConnectionPool(service_urls(service_url), keepalive, token)
        try:
            async with asyncio.timeout(timeout):
                connection = await pool.lookup(topic)
            producer_id, request_id = connection.next_id(), connection.next_id()
            producer = cls(pool, connection, producer_id)
            await connection.request(BaseCommand(
                type=BaseCommand.PRODUCER, producer=CommandProducer(
                    topic=topic, producer_id=producer_id, request_id=request_id,
                    producer_name=name)), request_id, timeout)
        except (TimeoutError, ClientError, OSError) as exc:
            pool.close()
            raise RemoteUnavailable(f"no producer on {topic} at {service_url}: {exc!r}") from None
        return producer

    @property
    def connected(self) -> bool:
        return not self.lost.done()

    @property
    def broker_url(self) -> str:
        return self._connection.url

    def send(self, entry: bytes) -> asyncio.Future[Position]:
        """Send one stored entry; the future resolves with its remote position."""
        future: asyncio.Future[Position] = asyncio.get_running_loop().create_future()
        if self.lost.done():
            future.set_exception(RemoteUnavailable(self.lost.result()))
            return future
        metadata, _ = split_entry(entry)
        sequence_id = next(self._sequence_ids)
        self._receipts[sequence_id] = future
        num = (metadata.num_messages_in_batch
               if metadata.HasField("num_messages_in_batch") else 1)
        try:
            self._connection.send(BaseCommand(type=BaseCommand.SEND, send=CommandSend(
                producer_id=self._producer_id, sequence_id=sequence_id, num_messages=num,
                highest_sequence_id=sequence_id, marker=metadata.HasField("marker_type"))),
                entry)
        except ClientError as exc:
            self._fail(str(exc))
        return future

    def _handle(self, frame: Frame) -> None:
        command = frame.command
        if command.type == BaseCommand.SEND_RECEIPT:
            receipt = command.send_receipt
            future = self._receipts.pop(receipt.sequence_id, None)
            if future is not None and not future.done():
                future.set_result(Position(receipt.message_id.ledgerId,
                                           receipt.message_id.entryId))
        elif command.type == BaseCommand.SEND_ERROR:
            error = command.send_error
            self._fail(f"send refused: {ServerError.Name(error.error)} {error.message}")
        else:
            self._fail("the remote broker closed our producer (the topic moved)")

    def _fail(self, reason: str) -> None:
        if not self.lost.done():
            self.lost.set_result(f"{self._connection.url}: {reason}")
        for future in self._receipts.values():
            if not future.done():
                future.set_exception(RemoteUnavailable(self.lost.result()))
                future.exception()  # the replicator may no longer be waiting for it
        self._receipts.clear()

    async def close(self) -> None:
        self._fail("closed by the replicator")
        connection = self._connection
        if not connection.closed:
            connection.unregister(_KINDS, self._producer_id)
            connection.send(BaseCommand(type=BaseCommand.CLOSE_PRODUCER,
                                        close_producer=CommandCloseProducer(
                                            producer_id=self._producer_id,
                                            request_id=connection.next_id())))
        self._pool.close()
