"""PIP-68 producer access modes on one topic: who may write now, and who waits.

As Pulsar's `AbstractTopic.incrementTopicEpochIfNeeded` decides it:

- *Shared* joins unless an exclusive producer holds the topic or waits for it
  (`ProducerBusy`).
- *Exclusive* takes the topic only when no producer at all is on it (`ProducerFenced`).
- *ExclusiveWithFencing* takes it regardless: every producer on the topic is closed and
  every waiting one refused with `ProducerFenced`.
- *WaitForExclusive* takes it when free, else queues; the first in the queue takes it when
  the exclusive producer leaves (or, which Pulsar's queue does not notice, when the last
  shared producer does).

Every exclusive grant moves the topic epoch on; a reconnecting exclusive producer brings
its epoch back and is fenced if the topic has moved past it (someone else wrote between).
The epoch lives in memory, with the topic: a reload starts from the epoch the first
exclusive producer brings (Pulsar persists it in the ledger's properties).
"""

from __future__ import annotations

import asyncio
from collections import deque

from impl.broker.errors import ProducerBusy, ProducerFenced
from impl.broker.producer import Producer
from wire.pulsar_api_pb2 import ProducerAccessMode


class ProducerAccess:
    def __init__(self) -> None:
        self.exclusive: Producer | None = None
        self._waiting: deque[tuple[Producer, asyncio.Future[None]]] = deque()
        self.epoch = 0

    @property
    def waiting(self) -> list[Producer]:
        return [producer for producer, _ in self._waiting]

    def admit(self, producer: Producer, on_topic: list[Producer]) -> asyncio.Future[None] | None:
        """None when `producer` may write now; a future that resolves when it may
        (WaitForExclusive, queued). Raises `ProducerBusy` or `ProducerFenced`. For
        ExclusiveWithFencing the caller has already closed `on_topic` (`fence_all`)."""
        mode = producer.access_mode
        if mode == ProducerAccessMode.Shared:
            if self.exclusive is not None or self._waiting:
                raise ProducerBusy(f"the topic has an exclusive producer: {self._holder()}")
            return None
        if mode == ProducerAccessMode.WaitForExclusive and (self.exclusive is not None
                                                             or on_topic):
            queued: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiting.append((producer, queued))
            return queued
        if mode == ProducerAccessMode.Exclusive:
            if self.exclusive is not None or self._waiting:
                raise ProducerFenced(f"the topic has an exclusive producer: {self._holder()}")
            if on_topic:
                raise ProducerFenced("the topic has shared producers")
        self._grant(producer)
        return None

    def fence_all(self) -> list[Producer]:
        """ExclusiveWithFencing arrives: refuse every waiting producer and forget the
        holder; returns the waiting producers, which the caller closes with the rest."""
        self.exclusive = None
        return self.refuse_waiting(ProducerFenced("fenced out by an ExclusiveWithFencing "
                                                  "producer"))

    def refuse_waiting(self, error: Exception) -> list[Producer]:
        """Fail every queued producer's wait with `error`; returns them."""
        refused = []
        while self._waiting:
            producer, queued = self._waiting.popleft()
            if not queued.done():
                queued.set_exception(error)
            refused.append(producer)
        return refused

    def release(self, producer: Producer, on_topic: list[Producer]) -> Producer | None:
        """`producer` left (closed, disconnected, fenced). Returns the waiting producer
        that takes the topic now, if any; the caller adds it to the topic."""
        for entry in list(self._waiting):
            if entry[0] is producer:
                self._waiting.remove(entry)
                entry[1].cancel()
        if self.exclusive is producer:
            self.exclusive = None
        while self.exclusive is None and not on_topic and self._waiting:
            successor, queued = self._waiting.popleft()
            try:
                self._grant(successor)
            except ProducerFenced as exc:
                queued.set_exception(exc)
                continue
            queued.set_result(None)
            return successor
        return None

    def _grant(self, producer: Producer) -> None:
        brought = producer.topic_epoch
        if brought is not None and brought < self.epoch:
            raise ProducerFenced(f"the topic epoch moved on to {self.epoch}; this producer "
                                 f"held epoch {brought}")
        self.epoch = brought if brought is not None else self.epoch + 1
        producer.topic_epoch = self.epoch
        self.exclusive = producer

    def _holder(self) -> str:
        if self.exclusive is not None:
            return self.exclusive.name
        return self._waiting[0][0].name if self._waiting else "none"
