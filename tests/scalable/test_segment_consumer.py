"""How a segment consumer settles its acknowledgements and when it counts a segment as
drained. A broker that dies after telling the consumer REACHED_END_OF_TOPIC, with an
acknowledgement still unanswered, leaves that message unacknowledged in the cursor: the
consumer must not call the segment drained (and be dropped by its reader) until a new
subscription has redelivered it and said the end again. An acknowledgement the old owner
refused is not retried through the new owner's subscription. The connections here are
scripted so the order of events is exact."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from harness.scalable_client.segment_consumer import Message, SegmentConsumer
from wire.errors import BrokerError, ConnectionClosed
from wire.frames import Frame, encode_entry
from wire.pulsar_api_pb2 import (
    BaseCommand,
    CommandCloseConsumer,
    CommandMessage,
    CommandReachedEndOfTopic,
    CommandSubscribe,
    MessageIdData,
    MessageMetadata,
)

TOPIC = "persistent://public/default/t-segment-0"


class ScriptedConnection:
    """Answers SUBSCRIBE at once; holds each ACK until the test settles it."""

    def __init__(self) -> None:
        self.url = "pulsar://scripted"
        self.closed = False
        self.acks: list[asyncio.Future[None]] = []
        self.handler: Callable[[Frame], None] | None = None
        self.on_close: Callable[[], None] | None = None
        self._ids = iter(range(1, 1000))

    def next_id(self) -> int:
        return next(self._ids)

    def register(self, kinds: tuple[int, ...], owner_id: int,
                 handler: Callable[[Frame], None], on_close: Callable[[], None]) -> None:
        self.handler, self.on_close = handler, on_close

    def unregister(self, kinds: tuple[int, ...], owner_id: int) -> None:
        self.handler = self.on_close = None

    def send(self, command: BaseCommand) -> None:
        if self.closed:
            raise ConnectionClosed("closed")

    async def request(self, command: BaseCommand, request_id: int, timeout: float = 30) -> None:
        if self.closed:
            raise ConnectionClosed("closed")
        if command.type == BaseCommand.ACK:
            answer = asyncio.get_running_loop().create_future()
            self.acks.append(answer)
            await answer

    def deliver(self, entry_id: int, redelivery: int = 0) -> None:
        assert self.handler is not None
        self.handler(Frame(BaseCommand(type=BaseCommand.MESSAGE, message=CommandMessage(
            consumer_id=1, message_id=MessageIdData(ledgerId=7, entryId=entry_id),
            redelivery_count=redelivery)),
            encode_entry(MessageMetadata(producer_name="p", sequence_id=entry_id,
                                         publish_time=1, partition_key="k"), b"v")))

    def end_of_topic(self) -> None:
        assert self.handler is not None
        self.handler(Frame(BaseCommand(type=BaseCommand.REACHED_END_OF_TOPIC,
                                       reachedEndOfTopic=CommandReachedEndOfTopic(consumer_id=1))))

    def close_consumer(self) -> None:
        """The broker closed the consumer (its segment moved); the connection stays up."""
        assert self.handler is not None
        self.handler(Frame(BaseCommand(type=BaseCommand.CLOSE_CONSUMER,
                                       close_consumer=CommandCloseConsumer(consumer_id=1))))

    def die(self) -> None:
        """The broker went away: pending acks fail, the consumer hears of it."""
        self.closed = True
        for answer in self.acks:
            if not answer.done():
                answer.set_exception(ConnectionClosed("closed"))
        if self.on_close is not None:
            self.on_close()


class ScriptedPool:
    """Hands out the connections the test queued; lookups fail while none is queued (the
    segment's owner is dead and nobody has taken it over yet)."""

    def __init__(self) -> None:
        self.ready: list[ScriptedConnection] = []

    async def lookup(self, topic: str) -> ScriptedConnection:
        if not self.ready:
            raise ConnectionClosed(f"no owner for {topic} yet")
        return self.ready.pop(0)


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0.01)


def test_an_end_heard_before_the_broker_died_does_not_drain_the_segment() -> None:
    async def scenario() -> None:
        received: list[Message] = []

        async def on_message(message: Message) -> None:
            received.append(message)

        pool = ScriptedPool()
        first, second = ScriptedConnection(), ScriptedConnection()
        pool.ready.append(first)
        consumer = SegmentConsumer(pool, TOPIC, "queue", CommandSubscribe.Shared, "c1",
                                   on_message, timeout=30)
        consumer.start()
        await _settle()
        first.deliver(0)
        first.end_of_topic()
        await _settle()
        assert len(first.acks) == 1 and not consumer.drained.is_set()

        first.die()  # the ack's answer never comes; no owner answers lookups for a while
        await asyncio.sleep(0.5)
        assert not consumer.drained.is_set(), "drained on an end heard by a dead connection"

        pool.ready.append(second)
        await asyncio.sleep(1.5)  # the resubscription's back-off
        second.deliver(0, redelivery=1)
        second.end_of_topic()
        await _settle()
        assert not consumer.drained.is_set(), "drained before the redelivery was acknowledged"
        second.acks[-1].set_result(None)
        await _settle()
        assert consumer.drained.is_set()
        assert [m.redelivery for m in received] == [0, 1]
        await consumer.close()

    asyncio.run(scenario())


def test_an_ack_refused_by_the_old_owner_is_not_confirmed_by_the_new_one() -> None:
    """The old owner refuses the ACK (its metadata store is away) and then closes the
    consumer; the new owner redelivers the message at once. The first delivery's ACK must
    settle unconfirmed rather than be retried, and confirmed, on the new subscription
    while the redelivered copy waits in the client's queue."""
    async def scenario() -> None:
        settled: list[tuple[int, bool]] = []
        handled: list[Message] = []

        async def on_message(message: Message) -> Callable[[bool], None]:
            handled.append(message)
            nth = len(handled)
            return lambda confirmed: settled.append((nth, confirmed))

        pool = ScriptedPool()
        first, second = ScriptedConnection(), ScriptedConnection()
        pool.ready.extend([first, second])
        consumer = SegmentConsumer(pool, TOPIC, "stream", CommandSubscribe.Failover, "c1",
                                   on_message, timeout=30)
        consumer.start()
        await _settle()
        first.deliver(0)
        await _settle()
        first.close_consumer()
        first.acks[0].set_exception(BrokerError(0, "metadata store unavailable"))
        await asyncio.sleep(0.3)  # the ACK's retry back-off, and the resubscription
        second.deliver(0)
        await _settle()
        assert settled == [(1, False)], "the first delivery's ACK settled otherwise"
        assert len(second.acks) == 1, "the old ACK went to the new subscription"
        second.acks[0].set_result(None)
        await _settle()
        assert settled == [(1, False), (2, True)]
        await consumer.close()

    asyncio.run(scenario())
