"""One topic loaded on this broker: its managed ledger, its producers and subscriptions.

Subscriptions are durable (their cursor persists) or, for readers, non-durable: opened at
the reader's start message id, and dropped with their last consumer, as Pulsar drops them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from impl.broker.access import ProducerAccess
from impl.broker.consumer import Consumer
from impl.broker.dedup_policy import NO_DEDUPLICATION, DeduplicationPolicy
from impl.broker.deduplication import ALREADY_STORED, MessageDeduplication
from impl.broker.errors import ConsumerBusy, ProducerBusy, TopicClosing
from impl.broker.peer import Peer
from impl.broker.producer import Producer
from impl.broker.subscription import Subscription, position_of
from impl.mutants import NONE, Mutants
from impl.naming.topic_name import TopicName
from impl.replication.broker_hooks import NO_REPLICATION, TopicHooks
from impl.replication.stopping import finish
from impl.resources import ResourceExists, ResourceNotFound
from impl.storage.api import (
    Entry,
    InitialPosition,
    ManagedCursor,
    ManagedLedger,
    Position,
    TopicTerminated,
)
from impl.system_cursors import is_system_cursor
from wire.frames import MalformedFrame, split_entry
from wire.pulsar_api_pb2 import (
    CommandProducer,
    CommandSend,
    CommandSubscribe,
    ProducerAccessMode,
)

log = logging.getLogger(__name__)

NOTHING_WRITTEN = Position(-1, -1)
"""The last message id of an empty topic, as Pulsar answers it."""
PAST_THE_END = Position(2**63 - 1, 2**63 - 1)
"""Pulsar's MessageId.latest: a position after every entry."""


class Topic:
    def __init__(self, name: TopicName, ledger: ManagedLedger,
                 on_fenced: Callable[[TopicName], None],
                 replication: TopicHooks = NO_REPLICATION, mutants: Mutants = NONE,
                 deduplication: DeduplicationPolicy = NO_DEDUPLICATION) -> None:
        self.name = name
        self.ledger = ledger
        self.replication = replication
        self.deduplication = MessageDeduplication(name, ledger, deduplication, mutants)
        """Await its `ready()` before letting producers in."""
        self._on_fenced = on_fenced
        self._mutants = mutants
        self.producers: list[Producer] = []
        self._access = ProducerAccess()
        self.subscriptions: dict[str, Subscription] = {}
        self.closing = False
        self.messages_in = 0
        self.bytes_in = 0

    def _check_open(self) -> None:
        if self.closing:
            raise TopicClosing(self.name)

    # --- producing ---------------------------------------------------------------------

    async def add_producer(self, peer: Peer, request: CommandProducer,
                           name: str) -> tuple[Producer, asyncio.Future[None] | None]:
        """The producer, and None when it may write now or a future that resolves when it
        may (WaitForExclusive). Refused on a terminated topic: that refusal, not
        SEND_ERROR (after which the client only reconnects), is how the client learns the
        topic is terminated. Raises `ProducerBusy` or `ProducerFenced` (access.py)."""
        self._check_open()
        if self.ledger.terminated:
            raise TopicTerminated(f"topic {self.name} is terminated")
        await self._claim_name(peer, name)
        producer = Producer(peer, request.producer_id, name,
                            lambda send, entry: self._append(name, send, entry),
                            lambda: self._on_fenced(self.name),
                            access_mode=request.producer_access_mode,
                            topic_epoch=(request.topic_epoch if request.HasField("topic_epoch")
                                         else None),
                            mutants=self._mutants)
        if self._mutants.on("exclusive-producer-not-enforced"):
            # PIP-68's single writer: every producer is let in as if it were Shared.
            producer.access_mode = ProducerAccessMode.Shared
        if producer.access_mode == ProducerAccessMode.ExclusiveWithFencing:
            for fenced in [*self._access.fence_all(), *self.producers]:
                fenced.close_by_broker()
            self.producers.clear()
        admitted = self._access.admit(producer, self.producers)
        if admitted is None:
            self.producers.append(producer)
        return producer, admitted

    async def _claim_name(self, peer: Peer, name: str) -> None:
        """A producer name is unique on a topic (Pulsar's NamingException, answered as
        `ProducerBusy`). A holder on another connection that no longer answers a PING is
        dropped with its connection, as Pulsar's liveness check does, so a client back
        from a network cut is not locked out by its own ghost until keep-alive notices."""
        if self._mutants.on("producer-name-not-exclusive"):
            return  # the name check Pulsar does in AbstractTopic.internalAddProducer
        holder = self._named(name)
        if holder is not None and holder.peer is not peer and not await holder.peer.alive():
            holder = self._named(name)  # the dead connection took its producers with it
        if holder is not None:
            raise ProducerBusy(f"producer with name {name!r} is already connected to topic "
                               f"{self.name}")

    def _named(self, name: str) -> Producer | None:
        return next((p for p in (*self.producers, *self._access.waiting)
                     if p.name == name and not p.closed), None)

    def remove_producer(self, producer: Producer) -> None:
        producer.closed = True
        if producer in self.producers:
            self.producers.remove(producer)
        successor = self._access.release(producer, self.producers)
        if successor is not None:
            self.producers.append(successor)

    async def _append(self, producer_name: str, send: CommandSend, entry: bytes) -> Position:
        position = await self.deduplication.publish(producer_name, send, entry,
                                                    lambda: self.ledger.add_entry(entry))
        if position == ALREADY_STORED:
            return position
        self.messages_in += 1
        self.bytes_in += len(entry)
        return position

    # --- consuming ---------------------------------------------------------------------

    async def subscribe(self, peer: Peer, command: CommandSubscribe) -> tuple[Subscription,
                                                                               Consumer]:
        self._check_open()
        subscription = self.subscriptions.get(command.subscription)
        if subscription is None:
            subscription = await self._open_subscription(command)
        await self.replication.subscribed(
            subscription.cursor, command.replicate_subscription_state and subscription.durable)
        consumer = Consumer(peer, command.consumer_id,
                            command.consumer_name or f"consumer-{command.consumer_id}",
                            command.priority_level)
        subscription.add_consumer(consumer, command.subType)
        return subscription, consumer

    async def _open_subscription(self, command: CommandSubscribe) -> Subscription:
        initial = (InitialPosition.EARLIEST
                   if command.initialPosition == CommandSubscribe.Earliest
                   else InitialPosition.LATEST)
        cursor: ManagedCursor
        if command.durable:
            cursor = await self.ledger.open_cursor(command.subscription, initial)
            self._check_open()
        else:
            # A reader: the client sends the message id it starts from and, when that
            # message is not wanted (start_message_id_inclusive off), skips it itself.
            start = (position_of(command.start_message_id)
                     if command.HasField("start_message_id") else None)
            cursor = self.ledger.open_non_durable_cursor(command.subscription, start, initial)
        return self._adopt(command.subscription, cursor, command.subType, command.durable)

    def _adopt(self, name: str, cursor: ManagedCursor, sub_type: int,
               durable: bool) -> Subscription:
        """The subscription over `cursor`; another request may have made it while we
        waited for the cursor, and then that one stays."""
        return self.subscriptions.setdefault(
            name, Subscription(name, cursor, sub_type, lambda: self.ledger.terminated,
                               self.replication.subscription_hooks(cursor), durable=durable,
                               mutants=self._mutants,
                               last_written=lambda: self.ledger.last_confirmed,
                               on_fenced=lambda: self._on_fenced(self.name)))

    # --- administering subscriptions (the admin API) ------------------------------------

    def subscription_names(self) -> list[str]:
        """Durable subscriptions (the ledger's cursors, replicators' aside) and those of
        open readers, as Pulsar lists a topic's subscriptions."""
        durable = {name for name in self.ledger.cursors() if not is_system_cursor(name)}
        return sorted(durable | set(self.subscriptions))

    async def existing_subscription(self, name: str) -> Subscription:
        """The subscription the admin API acts on: the one consumers are served by, or,
        for a durable cursor nobody subscribed to since the topic loaded here, one made
        for it now, which consumers that subscribe later share. `ResourceNotFound` when
        there is neither."""
        self._check_open()
        subscription = self.subscriptions.get(name)
        if subscription is not None:
            return subscription
        if name not in self.ledger.cursors() or is_system_cursor(name):
            raise ResourceNotFound("subscription", name)
        cursor = await self.ledger.open_cursor(name, InitialPosition.LATEST)
        self._check_open()
        return self._adopt(name, cursor, CommandSubscribe.Exclusive, durable=True)

    async def create_subscription(self, name: str, start: Position) -> None:
        """A durable subscription without consumers whose first message is the one at
        `start` (`ResourceExists` if the name is taken)."""
        self._check_open()
        if name in self.subscriptions or name in self.ledger.cursors():
            raise ResourceExists("subscription", name)
        cursor = await self.ledger.open_cursor(name, InitialPosition.LATEST)
        await cursor.reset(start)
        self._check_open()
        self._adopt(name, cursor, CommandSubscribe.Exclusive, durable=True)

    async def delete_subscription(self, name: str, force: bool) -> None:
        """Refused (`ConsumerBusy`) while consumers are connected, unless forced: then they
        are disconnected first, and a client that subscribes again creates it anew (as
        in Pulsar)."""
        subscription = await self.existing_subscription(name)
        if subscription.consumers and not force:
            raise ConsumerBusy(f"subscription {name} has active connected consumers")
        for consumer in subscription.consumers:
            consumer.close_by_broker()
        await subscription.close()
        if self.subscriptions.get(name) is subscription:
            del self.subscriptions[name]
        if subscription.durable:
            await self.ledger.delete_cursor(name)

    def remove_consumer(self, subscription: Subscription, consumer: Consumer) -> None:
        """A consumer left (closed, disconnected). A reader's subscription goes with its last
        consumer, leaving nothing behind; a SEEK's disconnects do not come this way, so
        the subscription it reset waits for its consumers to return."""
        consumer.closed = True
        subscription.remove_consumer(consumer)
        if (not subscription.durable and not subscription.consumers
                and self.subscriptions.get(subscription.name) is subscription):
            del self.subscriptions[subscription.name]
            subscription.stop_dispatching()

    async def unsubscribe(self, subscription: Subscription, consumer: Consumer) -> None:
        """Delete the subscription; only its last consumer may (as in Pulsar)."""
        others = [c for c in subscription.consumers if c is not consumer]
        if others:
            raise ConsumerBusy(f"subscription {subscription.name} has other consumers")
        subscription.remove_consumer(consumer)
        await subscription.close()
        self.subscriptions.pop(subscription.name, None)
        if subscription.durable:
            await self.ledger.delete_cursor(subscription.name)

    # --- reading back ------------------------------------------------------------------

    async def last_message(self) -> tuple[Position, int]:
        """The last message id, as GET_LAST_MESSAGE_ID answers it: the last entry and, when
        that entry is a batch, the index of its last message (else -1). The client
        compares batch indices too: without it, a reader would think it had read
        everything once it took the first message of the last batch."""
        last = self.ledger.last_confirmed
        if last is None:
            return NOTHING_WRITTEN, -1
        (entry,) = await self.ledger.read([last])
        try:
            metadata, _ = split_entry(entry.data)
        except MalformedFrame:  # written past the broker's checks; no consumer gets it
            return last, -1
        size = metadata.num_messages_in_batch if metadata.HasField("num_messages_in_batch") else 0
        return last, size - 1 if size > 0 else -1

    async def first_published_at_or_after(self, timestamp_ms: int) -> Position:
        """Where a SEEK to a publish time starts reading (Pulsar resets to the entry after
        the last one published before the time): the first entry published at or after
        `timestamp_ms`, or past the last entry when there is none."""
        def published_then(entry: Entry) -> bool:
            return bool(split_entry(entry.data)[0].publish_time >= timestamp_ms)
        found = await self.ledger.find_first(published_then)
        return found if found is not None else PAST_THE_END

    # --- unloading ---------------------------------------------------------------------

    async def close(self) -> None:
        """Tell every client to look the topic up again and stop dispatching; the ledger
        itself is closed by the namespace service."""
        self.closing = True
        for producer in [*self.producers, *self._access.refuse_waiting(TopicClosing(self.name))]:
            producer.close_by_broker()
        for subscription in self.subscriptions.values():
            for consumer in subscription.consumers:
                consumer.close_by_broker()
            await finish(subscription.close())
        await self.replication.close()
        await self.deduplication.close()
        log.info("closed clients of %s", self.name)

    def stats(self) -> dict[str, object]:
        stats: dict[str, Any] = {
            "msgInCounter": self.messages_in,
            "bytesInCounter": self.bytes_in,
            "publishers": [p.stats() for p in self.producers],
            "subscriptions": {name: s.stats() for name, s in self.subscriptions.items()},
        }
        self.replication.add_stats(stats)
        return stats
