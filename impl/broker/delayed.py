"""Delayed delivery (the client's `deliver_after`/`deliver_at`), after Pulsar's
`InMemoryDelayedDeliveryTracker`: per subscription, in memory, the positions of messages
whose `deliver_at_time` lies ahead. Only positions are kept; the entries are read again from
the cursor once due, so a long delay costs no memory for payloads and holds back no
reading of the messages behind it.

Only Shared and Key_Shared subscriptions honour the time (dispatchers say so with
`honours_delivery_time`); Exclusive and Failover deliver at once, as in Pulsar. A lost
tracker (an unload, a restart) only makes messages come early, never lost: the cursor
still holds them.
"""

from __future__ import annotations

import heapq

from impl.storage.api import Position


class DelayedDeliveryTracker:
    def __init__(self) -> None:
        self._due_at: dict[Position, int] = {}
        self._heap: list[tuple[int, Position]] = []

    def __len__(self) -> int:
        return len(self._due_at)

    def track(self, position: Position, deliver_at: int | None, now_ms: int) -> bool:
        """Hold `position` back if its time lies ahead; False when it may go now."""
        if deliver_at is None or deliver_at <= now_ms:
            return False
        self._due_at[position] = deliver_at
        heapq.heappush(self._heap, (deliver_at, position))
        return True

    def take_due(self, now_ms: int) -> list[Position]:
        """The positions whose time has come, no longer tracked."""
        due = []
        while self._heap and self._heap[0][0] <= now_ms:
            deliver_at, position = heapq.heappop(self._heap)
            if self._due_at.get(position) == deliver_at:
                del self._due_at[position]
                due.append(position)
        return due

    def take_all(self) -> list[Position]:
        """Everything held back (the subscription no longer honours delivery times)."""
        positions = sorted(self._due_at)
        self.clear()
        return positions

    def seconds_to_next(self, now_ms: int) -> float | None:
        """How long until the next message is due, or None when nothing is held."""
        while self._heap and self._due_at.get(self._heap[0][1]) != self._heap[0][0]:
            heapq.heappop(self._heap)  # acknowledged or taken meanwhile
        return max(0.0, (self._heap[0][0] - now_ms) / 1000) if self._heap else None

    def discard(self, position: Position) -> None:
        self._due_at.pop(position, None)

    def clear(self) -> None:
        self._due_at.clear()
        self._heap.clear()
