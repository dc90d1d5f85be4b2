"""A consumer on one segment topic: SUBSCRIBE, FLOW, MESSAGE in, individual ACK with a
receipt. It knows when the segment is *drained* for it: the broker said
REACHED_END_OF_TOPIC and every message it delivered has been acknowledged (and the broker
confirmed each acknowledgement). A lost connection or a consumer closed by the broker is
re-subscribed; unacknowledged messages come again.

A handler may return an `AckListener`: it is told, once the acknowledgement is settled,
whether the broker confirmed it (a harness records the `ack` as `ok` only then).

An acknowledgement goes only to the subscription that delivered the message. Once that
subscription is gone (its connection closed, or the broker closed the consumer when the
segment moved) the acknowledgement is unconfirmed, even though the position would still
name the message on the new subscription: the new owner may already have redelivered it,
and that copy may still be waiting in this client's queue. Confirming the acknowledgement
through the new subscription would put a receipt before a delivery the broker made
earlier, which a history reader cannot tell from a redelivery after a confirmed ack."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from harness.scalable_client.message_id import MessageId
from harness.scalable_client.retry import retrying
from wire.connection import ClientConnection, ConnectionPool
from wire.frames import Frame
from wire.pulsar_api_pb2 import (
    BaseCommand,
    CommandAck,
    CommandCloseConsumer,
    CommandFlow,
    CommandSubscribe,
)

log = logging.getLogger(__name__)

_KINDS = (BaseCommand.MESSAGE, BaseCommand.REACHED_END_OF_TOPIC, BaseCommand.CLOSE_CONSUMER,
          BaseCommand.ACTIVE_CONSUMER_CHANGE)
PERMITS = 500
ACKS_IN_FLIGHT = 200
"""Acknowledgements awaiting their receipt before the next message waits."""
ACK_CLOSE_WAIT = 5.0
"""How long a closing consumer waits for outstanding receipts."""


@dataclass(frozen=True)
class Message:
    segment_topic: str
    position: MessageId
    key: str
    payload: bytes
    redelivery: int = 0
    """How many times the broker delivered this message before."""
    subscription: int = 0
    """Which of its consumer's subscriptions delivered it (they are counted from 1)."""


AckListener = Callable[[bool], None]
MessageHandler = Callable[[Message], Awaitable[AckListener | None]]


class SegmentConsumer:
    def __init__(self, pool: ConnectionPool, topic: str, subscription: str,
                 sub_type: CommandSubscribe.SubType, name: str, on_message: MessageHandler,
                 timeout: float) -> None:
        self.topic = topic
        self._pool = pool
        self._subscription = subscription
        self._sub_type = sub_type
        self._name = name
        self._on_message = on_message
        self._timeout = timeout
        self._connection: ClientConnection | None = None
        self._consumer_id = 0
        self._subscriptions = 0
        self._queue: asyncio.Queue[Message | None] = asyncio.Queue()
        self._received = 0
        self._reached_end = False
        self._unacked = 0
        self.drained = asyncio.Event()
        self._closed = False
        self._task: asyncio.Task[None] | None = None
        self._acks_in_flight = asyncio.Semaphore(ACKS_IN_FLIGHT)
        self._ack_tasks: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        subscribed = False
        while not self._closed:
            if not subscribed or self._connection is None or self._connection.closed:
                await retrying(f"subscribe to {self.topic}", self._subscribe,
                               loop.time() + self._timeout)
                subscribed = True
                continue  # closed while subscribing?
            message = await self._queue.get()
            if message is None:
                continue  # a wake-up: resubscribe or closing
            self._unacked += 1
            listener = await self._on_message(message)
            # Acknowledgements are pipelined: the next message is handed over while this
            # one's receipt is on its way (a receipt waits for the cursor's metadata write,
            # which would otherwise cap a segment at one message per round trip).
            await self._acks_in_flight.acquire()
            task = asyncio.create_task(self._ack_and_tell(message, listener))
            self._ack_tasks.add(task)
            task.add_done_callback(self._ack_tasks.discard)

    async def _ack_and_tell(self, message: Message, listener: AckListener | None) -> None:
        """Acknowledge, then tell the listener whether the broker confirmed it; a close
        before the receipt counts as unconfirmed (the message will come again)."""
        confirmed = False
        try:
            confirmed = await self._ack(message)
        finally:
            self._acks_in_flight.release()
            if listener is not None:
                listener(confirmed)

    async def _subscribe(self) -> None:
        connection = await self._pool.lookup(self.topic)
        consumer_id, request_id = connection.next_id(), connection.next_id()
        self._reached_end = False
        connection.register(_KINDS, consumer_id, self._handle, self._lost)
        # Known before the answer, so that a close() while subscribing still closes it: a
        # consumer left behind would stay active in a Failover subscription and take the
        # messages nobody reads.
        self._connection, self._consumer_id = connection, consumer_id
        self._subscriptions += 1
        await connection.request(BaseCommand(type=BaseCommand.SUBSCRIBE, subscribe=CommandSubscribe(
            topic=self.topic, subscription=self._subscription, subType=self._sub_type,
            consumer_id=consumer_id, request_id=request_id, consumer_name=self._name,
            initialPosition=CommandSubscribe.Latest)), request_id)
        log.info("%s subscribed to %s as consumer %d on %s", self._name, self.topic,
                 consumer_id, connection.url)
        self._flow(PERMITS)

    def _flow(self, permits: int) -> None:
        if self._connection is not None and not self._connection.closed:
            self._connection.send(BaseCommand(type=BaseCommand.FLOW, flow=CommandFlow(
                consumer_id=self._consumer_id, messagePermits=permits)))

    def _handle(self, frame: Frame) -> None:
        command = frame.command
        if command.type == BaseCommand.MESSAGE:
            metadata = frame.metadata()
            position = MessageId.of(command.message.message_id)
            self._queue.put_nowait(Message(self.topic, position, metadata.partition_key,
                                           frame.payload(), command.message.redelivery_count,
                                           self._subscriptions))
            self._received += 1
            if self._received % (PERMITS // 2) == 0:
                self._flow(PERMITS // 2)
        elif command.type == BaseCommand.REACHED_END_OF_TOPIC:
            self._reached_end = True
            self._check_drained()
        elif command.type == BaseCommand.CLOSE_CONSUMER:
            self._lost()

    async def _ack(self, message: Message) -> bool:
        """Acknowledge and wait for the broker's receipt (a drained segment must really be
        acknowledged before the controller is told); False when the subscription that
        delivered the message went away first, so its answer never came."""
        loop = asyncio.get_running_loop()

        async def ack_once() -> bool:
            connection = self._connection
            if (connection is None or connection.closed
                    or self._subscriptions != message.subscription):
                return False  # redelivered after the resubscription; acknowledged then
            request_id = connection.next_id()
            await connection.request(BaseCommand(type=BaseCommand.ACK, ack=CommandAck(
                consumer_id=self._consumer_id, ack_type=CommandAck.Individual,
                message_id=[message.position.to_data()],
                request_id=request_id)), request_id)
            return True
        confirmed: bool = await retrying(f"ack on {self.topic}", ack_once,
                                         loop.time() + self._timeout)
        self._unacked -= 1
        self._check_drained()
        return confirmed

    def _check_drained(self) -> None:
        if self._reached_end and self._unacked == 0 and self._queue.empty():
            self.drained.set()

    def _lost(self) -> None:
        connection, self._connection = self._connection, None
        # The end this connection heard no longer holds: the messages whose acks it took
        # down come again, and only the next subscription may say the segment is done.
        self._reached_end = False
        if connection is not None:
            connection.unregister(_KINDS, self._consumer_id)
        while not self._queue.empty():  # unacknowledged: they come again after resubscribing
            self._queue.get_nowait()
        self._queue.put_nowait(None)

    async def close(self) -> None:
        """Stop reading and close the consumer on the broker. The reading task is awaited
        first: a subscription it was still making must be closed too, or the broker keeps
        a consumer nobody reads (in a Failover subscription, the active one)."""
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait([self._task])
        if self._ack_tasks:
            _, late = await asyncio.wait(self._ack_tasks, timeout=ACK_CLOSE_WAIT)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late)
        connection = self._connection
        log.info("%s closes its consumer %d of %s (%s)", self._name, self._consumer_id,
                 self.topic, "connected" if connection is not None else "not subscribed")
        if connection is not None and not connection.closed:
            connection.unregister(_KINDS, self._consumer_id)
            request_id = connection.next_id()
            try:
                await connection.request(BaseCommand(
                    type=BaseCommand.CLOSE_CONSUMER, close_consumer=CommandCloseConsumer(
                        consumer_id=self._consumer_id, request_id=request_id)), request_id,
                    timeout=5.0)
            except Exception as exc:
                log.info("closing consumer on %s: %s", self.topic, exc)
        self._connection = None
