"""`non-persistent://` topics, as Pulsar's `NonPersistentTopic` serves them: a message goes
at once to the consumers connected when it arrives, and nowhere else.

Nothing is stored (impl/broker/no_storage.py stands in for the ledger and cursors): a
producer's send is receipted as soon as it was handed out, with a made-up message id
(ledger 0, counting entries), even when nobody listens; a subscription lives only while
it has consumers, so one that joins later sees nothing older; a message that the
subscription type's consumer cannot take now (no permits) is dropped and counted, as
Pulsar's non-persistent dispatchers drop it. Acknowledgements and redelivery requests
change nothing, and there is no backlog. SEEK is refused.
"""

from __future__ import annotations

import itertools

from impl.broker import commands
from impl.broker.consumer import Consumer
from impl.broker.entries import DispatchEntry
from impl.broker.errors import SeekRefused
from impl.broker.no_storage import NoLedger
from impl.broker.subscription import Subscription
from impl.broker.topic import Topic
from impl.mutants import NONE, Mutants
from impl.naming.topic_name import TopicName
from impl.storage.api import Entry, ManagedCursor, Position
from wire.pulsar_api_pb2 import CommandAck, CommandSend, MessageIdData

MADE_UP_LEDGER = 0


class LiveSubscription(Subscription):
    """A subscription that hands each message to a consumer the moment it is published."""

    def __init__(self, name: str, cursor: ManagedCursor, sub_type: int,
                 mutants: Mutants = NONE) -> None:
        super().__init__(name, cursor, sub_type, lambda: False, durable=False, mutants=mutants)
        self.messages_dropped = 0

    def add_consumer(self, consumer: Consumer, sub_type: int) -> None:
        self._join(consumer, sub_type)  # no dispatch loop: `publish` hands messages out

    def publish(self, entry: DispatchEntry) -> None:
        self.dispatcher.begin_round()
        consumer = self.dispatcher.route(entry)
        if consumer is None:
            self.messages_dropped += entry.num_messages
            return
        consumer.deliver(entry, 0)
        self.messages_out += entry.num_messages

    async def acknowledge(self, consumer: Consumer, ack: CommandAck) -> None:
        """Nothing is kept to acknowledge (clients send no acks here anyway); a receipt
        asked for is still answered."""
        if ack.HasField("request_id"):
            consumer.peer.send(commands.ack_response(consumer.consumer_id, ack.request_id))

    def redeliver(self, consumer: Consumer, messages: list[MessageIdData]) -> None:
        """Nothing is kept to deliver again."""

    async def reset(self, read_from: Position) -> None:
        raise SeekRefused(f"seek is not supported on a non-persistent topic "
                          f"(subscription {self.name})")

    def stats(self) -> dict[str, object]:
        return {**super().stats(), "msgDropped": self.messages_dropped}


class NonPersistentTopic(Topic):
    def __init__(self, name: TopicName, mutants: Mutants = NONE) -> None:
        super().__init__(name, NoLedger(str(name)), lambda _name: None, mutants=mutants)
        self._entry_ids = itertools.count()

    async def _append(self, producer_name: str, send: CommandSend, entry: bytes) -> Position:
        """Handed to the consumers connected now; nothing is kept, so nothing is
        deduplicated either (Pulsar deduplicates persistent topics only)."""
        position = Position(MADE_UP_LEDGER, next(self._entry_ids))
        self.messages_in += 1
        self.bytes_in += len(entry)
        published = DispatchEntry.of(Entry(position, entry))
        for subscription in self.subscriptions.values():
            if isinstance(subscription, LiveSubscription):
                subscription.publish(published)
        return position

    def _adopt(self, name: str, cursor: ManagedCursor, sub_type: int,
               durable: bool) -> Subscription:
        """Every subscription is live, durable or not: it goes with its last consumer."""
        return self.subscriptions.setdefault(
            name, LiveSubscription(name, cursor, sub_type, self._mutants))
