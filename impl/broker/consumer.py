"""One consumer on one connection: its permits and the frames that reach it.

Permits count messages, as in Pulsar: a batch entry costs its `num_messages`, and an
entry goes out only while the consumer has permits left. As in Pulsar, the last entry may
take the permits below zero: waiting for permits to cover a whole batch would deadlock a
client that returns permits only after consuming half its queue.
"""

from __future__ import annotations

from impl.broker import commands
from impl.broker.entries import DispatchEntry
from impl.broker.peer import Peer


class Consumer:
    def __init__(self, peer: Peer, consumer_id: int, name: str, priority: int = 0) -> None:
        self.peer = peer
        self.consumer_id = consumer_id
        self.name = name
        self.priority = priority
        self.permits = 0
        self.closed = False
        self.told_end_of_topic = False
        self.messages_out = 0

    def __repr__(self) -> str:
        return f"Consumer({self.name!r}, id={self.consumer_id}, {self.peer.address})"

    def add_permits(self, count: int) -> None:
        self.permits += count

    def can_take(self, entry: DispatchEntry) -> bool:
        return not self.closed and self.permits > 0

    def deliver(self, entry: DispatchEntry, redelivery_count: int,
                ack_set: list[int] | None = None) -> None:
        self.permits -= entry.num_messages
        self.messages_out += entry.num_messages
        self.peer.send(commands.message(self.consumer_id, entry.position, redelivery_count,
                                        ack_set or ()), entry.data)

    def set_active(self, active: bool) -> None:
        """Failover: tell the client whether it is the active consumer now."""
        if not self.closed:
            self.peer.send(commands.active_consumer_change(self.consumer_id, active))

    def tell_end_of_topic(self) -> None:
        if not self.told_end_of_topic and not self.closed:
            self.told_end_of_topic = True
            if self.peer.understands_end_of_topic:
                self.peer.send(commands.reached_end_of_topic(self.consumer_id))

    def close_by_broker(self) -> None:
        """The topic is leaving this broker: the client must look it up again."""
        if not self.closed:
            self.closed = True
            self.peer.send(commands.close_consumer(self.consumer_id))

    def stats(self) -> dict[str, object]:
        return {"consumerName": self.name, "address": self.peer.address,
                "availablePermits": self.permits, "msgOutCounter": self.messages_out}
