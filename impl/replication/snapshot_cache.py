"""The snapshots one replicated subscription has read and not yet used (PIP-33, "Storing
snapshots": a small cache per subscription, refilled as it reads the topic)."""

from __future__ import annotations

from bisect import bisect_right, insort

from impl.mutants import NONE, Mutants
from impl.replication.markers import Snapshot
from impl.storage.api import Position


class ReplicatedSubscriptionSnapshotCache:
    """Snapshots in order of their local position, at most `max_snapshots` (the oldest go
    first when it overflows; the subscription reads newer ones again as it moves on)."""

    def __init__(self, subscription_name: str, max_snapshots: int = 10,
                 mutants: Mutants = NONE) -> None:
        if max_snapshots <= 0:
            raise ValueError(f"{subscription_name}: a snapshot cache holds at least one, "
                             f"not {max_snapshots}")
        self.subscription_name = subscription_name
        self.max_snapshots = max_snapshots
        self._mutants = mutants
        self._positions: list[Position] = []
        self._snapshots: dict[Position, Snapshot] = {}
        self._last_used: Position | None = None
        self.last_used: Snapshot | None = None
        """The snapshot whose positions the subscription last sent (stats)."""

    def add_new_snapshot(self, snapshot: Snapshot) -> None:
        """A snapshot marker the subscription just read. One at or before a snapshot already
        used is dropped, so the updates a subscription sends never go backwards (a marker
        can be read twice after a rewind)."""
        position = snapshot.local_position
        if self._last_used is not None and position <= self._last_used:
            return
        if position not in self._snapshots:
            insort(self._positions, position)
        self._snapshots[position] = snapshot
        while len(self._positions) > self.max_snapshots:
            del self._snapshots[self._positions.pop(0)]

    def advanced_mark_delete(self, mark_delete: Position) -> Snapshot | None:
        """The subscription's mark-delete moved to `mark_delete`: the newest snapshot at or
        before it, which the other clusters may now apply, or None. That snapshot and every
        older one leave the cache."""
        usable = bisect_right(self._positions, mark_delete)
        if self._mutants.on("update-past-mark-delete") and usable < len(self._positions):
            usable += 1  # off by one: the first snapshot *after* mark-delete
        if usable == 0:
            return None
        chosen = self._snapshots[self._positions[usable - 1]]
        for position in self._positions[:usable]:
            del self._snapshots[position]
        del self._positions[:usable]
        self._last_used = chosen.local_position
        self.last_used = chosen
        return chosen

    def snapshots(self) -> list[Snapshot]:
        """What the cache holds, oldest first (stats and tests)."""
        return [self._snapshots[p] for p in self._positions]
