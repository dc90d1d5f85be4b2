"""A producer on one segment topic: SEND with the key as `partition_key`, the receipt's
position back, `SegmentTerminated` once the segment is sealed. A connection lost or a
producer closed by the broker (the topic moved) is re-created after a lookup and the send
repeated, so an unanswered send may be stored twice but never silently dropped."""

from __future__ import annotations

import asyncio
import time

from harness.scalable_client.errors import SegmentTerminated
from harness.scalable_client.message_id import MessageId
from harness.scalable_client.retry import retrying
from wire.connection import ClientConnection, ConnectionPool
from wire.errors import BrokerError, ConnectionClosed
from wire.frames import Frame, encode_entry
from wire.pulsar_api_pb2 import (
    BaseCommand,
    CommandCloseProducer,
    CommandProducer,
    CommandSend,
    MessageMetadata,
    ServerError,
)

_KINDS = (BaseCommand.SEND_RECEIPT, BaseCommand.SEND_ERROR, BaseCommand.CLOSE_PRODUCER)


class SegmentProducer:
    def __init__(self, pool: ConnectionPool, topic: str, name: str, timeout: float) -> None:
        self.topic = topic
        self._pool = pool
        self._name = name
        self._timeout = timeout
        self._connection: ClientConnection | None = None
        self._producer_id = 0
        self._sequence = 0
        self._pending: dict[int, asyncio.Future[MessageId]] = {}
        self._ready: asyncio.Lock = asyncio.Lock()
        self.terminated = False

    async def _producer(self) -> tuple[ClientConnection, int]:
        async with self._ready:
            if self._connection is None or self._connection.closed:
                connection = await self._pool.lookup(self.topic)
                producer_id, request_id = connection.next_id(), connection.next_id()
                connection.register(_KINDS, producer_id, self._handle, self._lost)
                await connection.request(BaseCommand(
                    type=BaseCommand.PRODUCER, producer=CommandProducer(
                        topic=self.topic, producer_id=producer_id, request_id=request_id,
                        producer_name=self._name)), request_id)
                self._connection, self._producer_id = connection, producer_id
            return self._connection, self._producer_id

    async def send(self, key: str, payload: bytes) -> MessageId:
        """The position the segment stored the message at."""
        deadline = asyncio.get_running_loop().time() + self._timeout
        return await retrying(f"send to {self.topic}", lambda: self._send_once(key, payload),
                              deadline)

    async def _send_once(self, key: str, payload: bytes) -> MessageId:
        if self.terminated:
            raise SegmentTerminated(self.topic)
        try:
            connection, producer_id = await self._producer()
        except BrokerError as exc:
            if exc.code == ServerError.TopicTerminatedError:
                self.terminated = True
                raise SegmentTerminated(self.topic) from None
            raise
        self._sequence += 1
        sequence = self._sequence
        future: asyncio.Future[MessageId] = asyncio.get_running_loop().create_future()
        self._pending[sequence] = future
        metadata = MessageMetadata(producer_name=self._name, sequence_id=sequence,
                                   publish_time=int(time.time() * 1000), partition_key=key)
        try:
            connection.send(BaseCommand(type=BaseCommand.SEND, send=CommandSend(
                producer_id=producer_id, sequence_id=sequence, num_messages=1)),
                encode_entry(metadata, payload))
            async with asyncio.timeout(self._timeout):
                return await future
        finally:
            self._pending.pop(sequence, None)

    def _handle(self, frame: Frame) -> None:
        command = frame.command
        if command.type == BaseCommand.SEND_RECEIPT:
            receipt = command.send_receipt
            self._settle(receipt.sequence_id, MessageId.of(receipt.message_id))
        elif command.type == BaseCommand.SEND_ERROR:
            error = command.send_error
            if error.error == ServerError.TopicTerminatedError:
                self.terminated = True
                self._settle(error.sequence_id, SegmentTerminated(self.topic))
            else:
                self._settle(error.sequence_id, BrokerError(error.error, error.message))
        else:  # CLOSE_PRODUCER: the topic moves; look it up again
            self._lost()

    def _settle(self, sequence: int, outcome: MessageId | Exception) -> None:
        future = self._pending.get(sequence)
        if future is None or future.done():
            return
        if isinstance(outcome, Exception):
            future.set_exception(outcome)
        else:
            future.set_result(outcome)

    def _lost(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.unregister(_KINDS, self._producer_id)
        for future in self._pending.values():
            if not future.done():
                future.set_exception(ConnectionClosed(f"producer on {self.topic} closed"))

    def close(self) -> None:
        connection = self._connection
        if connection is not None and not connection.closed:
            connection.unregister(_KINDS, self._producer_id)
            connection.send(BaseCommand(type=BaseCommand.CLOSE_PRODUCER,
                                        close_producer=CommandCloseProducer(
                                            producer_id=self._producer_id,
                                            request_id=connection.next_id())))
        self._connection = None
