"""Key_Shared: every key sticks to one consumer, so each key's messages arrive in order.

Keys map to consumers by consistent hashing (Murmur3 of the key onto a ring of points per
consumer, placed by the consumer's name and id), so a consumer joining or leaving moves
only a share of the keys, and a consumer that reconnects (after its topic moved, say)
gets its own keys back. A moved key
must not overtake itself: while another consumer still holds unacknowledged messages of a
key, the key's later messages wait, and within one pass a held message holds back every
later message of its key.
"""

from __future__ import annotations

import bisect

import mmh3

from impl.broker.consumer import Consumer
from impl.broker.dispatch.base import Dispatcher
from impl.broker.entries import DispatchEntry

POINTS_PER_CONSUMER = 100


def key_hash(key: bytes) -> int:
    return mmh3.hash(key, signed=False)


class KeySharedDispatcher(Dispatcher):
    sub_type_name = "Key_Shared"
    honours_delivery_time = True

    def __init__(self) -> None:
        super().__init__()
        self._ring: list[tuple[int, int]] = []  # (point, index into consumers)
        self._in_flight: dict[int, tuple[Consumer, int]] = {}
        self._held: set[int] = set()

    def add(self, consumer: Consumer) -> list[Consumer]:
        super().add(consumer)
        self._rebuild()
        return []

    def remove(self, consumer: Consumer) -> list[Consumer]:
        super().remove(consumer)
        self._rebuild()
        return []

    def _rebuild(self) -> None:
        self._ring = sorted(
            (key_hash(f"{c.name}|{c.consumer_id}|{n}".encode()), i)
            for i, c in enumerate(self.consumers) for n in range(POINTS_PER_CONSUMER))

    def _owner(self, hashed: int) -> Consumer:
        at = bisect.bisect_left(self._ring, (hashed, -1)) % len(self._ring)
        return self.consumers[self._ring[at][1]]

    def begin_round(self) -> None:
        self._held.clear()

    def route(self, entry: DispatchEntry) -> Consumer | None:
        if not self._ring:
            return None
        hashed = key_hash(entry.sticky_key)
        consumer = self._owner(hashed)
        holder = self._in_flight.get(hashed)
        if (hashed in self._held or (holder is not None and holder[0] is not consumer)
                or not consumer.can_take(entry)):
            self._held.add(hashed)
            return None
        return consumer

    def delivered(self, entry: DispatchEntry, consumer: Consumer) -> None:
        hashed = key_hash(entry.sticky_key)
        _, count = self._in_flight.get(hashed, (consumer, 0))
        self._in_flight[hashed] = (consumer, count + 1)

    def settled(self, entry: DispatchEntry, consumer: Consumer) -> None:
        hashed = key_hash(entry.sticky_key)
        holder = self._in_flight.get(hashed)
        if holder is None:
            return
        if holder[1] <= 1:
            del self._in_flight[hashed]
        else:
            self._in_flight[hashed] = (holder[0], holder[1] - 1)
