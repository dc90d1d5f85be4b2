"""What replicated subscriptions need from the broker, and the clock they run on.

The broker front end implements `ReplicatedTopic` and `ReplicatedSubscription` over its
managed ledger, cursors and replicators; everything in impl/replication is written against
these alone, so it is tested without a broker and the broker can be read without it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection, Iterable
from typing import Protocol

from impl.replication.acknowledged import MessageIdentity
from impl.storage.api import InitialPosition, Position


class Clock(Protocol):
    def monotonic(self) -> float:
        """Seconds on a clock that never goes back: snapshot timeouts."""
        ...

    def wall_ms(self) -> int:
        """Milliseconds since the epoch: a marker's publish time."""
        ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def wall_ms(self) -> int:
        return time.time_ns() // 1_000_000

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


SYSTEM_CLOCK = SystemClock()


class ReplicatedSubscription(Protocol):
    """A durable subscription created with `replicate_subscription_state`."""

    @property
    def name(self) -> str: ...

    @property
    def mark_delete_position(self) -> Position: ...

    async def move_mark_delete(self, position: Position) -> None:
        """Acknowledge cumulatively up to `position` (an update marker from another cluster);
        only ever called with a position past the current mark-delete."""
        ...

    def acknowledged_after_mark_delete(self) -> Iterable[MessageIdentity]:
        """Only with `replicate_individually_deleted`: the identity of every message
        acknowledged individually above mark-delete, in position order. A local message's
        identity is this cluster and its position; a replicated one's is what
        `acknowledged.original_position` reads from its metadata when it is dispatched."""
        ...


class ReplicatedTopic(Protocol):
    """One topic with replication to other clusters and replicated subscriptions."""

    async def write_marker(self, entry: bytes) -> Position:
        """Append a marker entry (from `markers.encode_marker`) to the local topic."""
        ...

    def last_position(self) -> Position | None:
        """The last entry written here, markers and replicated entries included: what a
        snapshot response reports."""
        ...

    def last_published_position(self) -> Position | None:
        """The last entry that is not a marker: a snapshot is only worth taking when this
        moved (markers alone must not keep snapshots going on an idle topic)."""
        ...

    def remote_clusters(self) -> Collection[str]:
        """The clusters this topic replicates to (one replicator each)."""
        ...

    def replicator_connected(self, cluster: str) -> bool:
        """Whether the replicator to `cluster` has its producer connected."""
        ...

    def subscription(self, name: str) -> ReplicatedSubscription | None: ...

    def replicated_subscriptions(self) -> Iterable[ReplicatedSubscription]: ...

    async def create_subscription(self, name: str,
                                  start: Position | InitialPosition) -> ReplicatedSubscription:
        """Create a replicated durable subscription whose mark-delete is `start` (an update
        marker named a subscription this cluster does not have yet)."""
        ...
