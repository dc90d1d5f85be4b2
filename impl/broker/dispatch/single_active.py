"""Exclusive and Failover: one consumer at a time sees the topic, in order.

Failover picks the active consumer as Pulsar does for a non-partitioned topic: the lowest
priority level, then the consumer name in sort order. When the active consumer changes,
the previous one's unacknowledged messages go to the new one, and every consumer hears
ACTIVE_CONSUMER_CHANGE.
"""

from __future__ import annotations

from impl.broker.consumer import Consumer
from impl.broker.dispatch.base import Dispatcher
from impl.broker.entries import DispatchEntry
from impl.broker.errors import ConsumerBusy


class _SingleActive(Dispatcher):
    ordered = True

    @property
    def active(self) -> Consumer | None:
        return self.consumers[0] if self.consumers else None

    def ready(self) -> bool:
        active = self.active
        return active is not None and active.permits > 0 and not active.closed

    def route(self, entry: DispatchEntry) -> Consumer | None:
        active = self.active
        return active if active is not None and active.can_take(entry) else None


class ExclusiveDispatcher(_SingleActive):
    sub_type_name = "Exclusive"

    def add(self, consumer: Consumer) -> list[Consumer]:
        if self.consumers:
            raise ConsumerBusy(f"exclusive subscription already has consumer "
                               f"{self.consumers[0].name!r}")
        return super().add(consumer)


class FailoverDispatcher(_SingleActive):
    sub_type_name = "Failover"

    def add(self, consumer: Consumer) -> list[Consumer]:
        before = self.active
        self.consumers.append(consumer)
        return self._reorder(before, announce_to=[consumer])

    def remove(self, consumer: Consumer) -> list[Consumer]:
        before = self.active
        super().remove(consumer)
        return self._reorder(before, announce_to=[])

    def _reorder(self, before: Consumer | None, announce_to: list[Consumer]) -> list[Consumer]:
        self.consumers.sort(key=lambda c: (c.priority, c.name))
        after = self.active
        if after is before:
            for consumer in announce_to:
                consumer.set_active(consumer is after)
            return []
        for consumer in self.consumers:
            consumer.set_active(consumer is after)
        return [before] if before is not None else []
