"""What every dispatcher offers the subscription."""

from __future__ import annotations

from impl.broker.consumer import Consumer
from impl.broker.entries import DispatchEntry


class Dispatcher:
    sub_type_name = ""
    ordered = False
    """True when an entry that cannot go out now must hold back every later one (one
    active consumer, which sees the topic in order)."""
    honours_delivery_time = False
    """Whether delayed messages wait for their `deliver_at_time` (Shared, Key_Shared)."""

    def __init__(self) -> None:
        self.consumers: list[Consumer] = []

    def add(self, consumer: Consumer) -> list[Consumer]:
        """Take a new consumer; returns the consumers whose unacknowledged messages must
        go to someone else now (Failover's previous active consumer). May raise
        `ConsumerBusy`."""
        self.consumers.append(consumer)
        return []

    def remove(self, consumer: Consumer) -> list[Consumer]:
        """Forget a consumer; returns others whose unacknowledged messages must move."""
        if consumer in self.consumers:
            self.consumers.remove(consumer)
        return []

    def ready(self) -> bool:
        """Whether any consumer could take an entry now."""
        return any(c.permits > 0 and not c.closed for c in self.consumers)

    def begin_round(self) -> None:
        """A new pass over the entries waiting for delivery starts."""

    def route(self, entry: DispatchEntry) -> Consumer | None:
        """The consumer that takes `entry` now, or None to hold it back."""
        raise NotImplementedError

    def delivered(self, entry: DispatchEntry, consumer: Consumer) -> None:
        """`entry` went out to `consumer` and is unacknowledged."""

    def settled(self, entry: DispatchEntry, consumer: Consumer) -> None:
        """`entry`, out at `consumer`, was acknowledged or taken back for redelivery."""
