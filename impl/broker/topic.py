"""One topic loaded on this broker: its managed ledger, its producers and subscriptions."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from impl.broker.consumer import Consumer
from impl.broker.errors import ConsumerBusy, TopicClosing
from impl.broker.peer import Peer
from impl.broker.producer import Producer
from impl.broker.subscription import Subscription
from impl.ownership.topic_name import TopicName
from impl.replication.broker_hooks import NO_REPLICATION, TopicHooks
from impl.replication.stopping import finish
from impl.storage.api import InitialPosition, ManagedLedger, Position, TopicTerminated
from wire.pulsar_api_pb2 import CommandSubscribe

log = logging.getLogger(__name__)


class Topic:
    def __init__(self, name: TopicName, ledger: ManagedLedger,
                 on_fenced: Callable[[TopicName], None],
                 replication: TopicHooks = NO_REPLICATION) -> None:
        self.name = name
        self.ledger = ledger
        self.replication = replication
        self._on_fenced = on_fenced
        self.producers: list[Producer] = []
        self.subscriptions: dict[str, Subscription] = {}
        self.closing = False
        self.messages_in = 0
        self.bytes_in = 0

    def _check_open(self) -> None:
        if self.closing:
            raise TopicClosing(self.name)

    # --- producing ---------------------------------------------------------------------

    def add_producer(self, peer: Peer, producer_id: int, name: str) -> Producer:
        """Refused on a terminated topic: that refusal, not SEND_ERROR (after which the
        client only reconnects), is how the client learns the topic is terminated."""
        self._check_open()
        if self.ledger.terminated:
            raise TopicTerminated(f"topic {self.name} is terminated")
        producer = Producer(peer, producer_id, name, self._append,
                            lambda: self._on_fenced(self.name))
        self.producers.append(producer)
        return producer

    def remove_producer(self, producer: Producer) -> None:
        producer.closed = True
        if producer in self.producers:
            self.producers.remove(producer)

    async def _append(self, entry: bytes) -> Position:
        position = await self.ledger.add_entry(entry)
        self.messages_in += 1
        self.bytes_in += len(entry)
        return position

    # --- consuming ---------------------------------------------------------------------

    async def subscribe(self, peer: Peer, command: CommandSubscribe) -> tuple[Subscription,
                                                                               Consumer]:
        self._check_open()
        subscription = self.subscriptions.get(command.subscription)
        if subscription is None:
            initial = (InitialPosition.EARLIEST
                       if command.initialPosition == CommandSubscribe.Earliest
                       else InitialPosition.LATEST)
            cursor = await self.ledger.open_cursor(command.subscription, initial)
            self._check_open()
            # Another SUBSCRIBE may have opened it while we waited for the cursor.
            subscription = self.subscriptions.setdefault(
                command.subscription,
                Subscription(command.subscription, cursor, command.subType,
                             lambda: self.ledger.terminated,
                             self.replication.subscription_hooks(cursor)))
        await self.replication.subscribed(subscription.cursor,
                                          command.replicate_subscription_state)
        consumer = Consumer(peer, command.consumer_id,
                            command.consumer_name or f"consumer-{command.consumer_id}",
                            command.priority_level)
        subscription.add_consumer(consumer, command.subType)
        return subscription, consumer

    async def unsubscribe(self, subscription: Subscription, consumer: Consumer) -> None:
        """Delete the subscription; only its last consumer may (as in Pulsar)."""
        others = [c for c in subscription.consumers if c is not consumer]
        if others:
            raise ConsumerBusy(f"subscription {subscription.name} has other consumers")
        subscription.remove_consumer(consumer)
        await subscription.close()
        self.subscriptions.pop(subscription.name, None)
        await self.ledger.delete_cursor(subscription.name)

    # --- unloading ---------------------------------------------------------------------

    async def close(self) -> None:
        """Tell every client to look the topic up again and stop dispatching; the ledger
        itself is closed by the namespace service."""
        self.closing = True
        for producer in self.producers:
            producer.close_by_broker()
        for subscription in self.subscriptions.values():
            for consumer in subscription.consumers:
                consumer.close_by_broker()
            await finish(subscription.close())
        await self.replication.close()
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
