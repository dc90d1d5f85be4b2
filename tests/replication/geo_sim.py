"""A few clusters' copies of one topic in memory, with replication moved by hand.

Each cluster has a `SimTopic` (our implementation of the broker's `ReplicatedTopic`) and a
real `ReplicatedSubscriptionsController`; `Geo.replicate(src, dst, n)` plays the replicator
(002's filter via `routing.replicates_to`, `replicated_from`, the origin stamp) one entry at
a time, so a test chooses exactly which message overtakes which. The clock is fake: time
moves only when a test says so.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Iterable, Sequence

from impl.mutants import NONE, Mutants
from impl.replication.acknowledged import MessageIdentity, identity_of, stamp_original_position
from impl.replication.config import ReplicatedSubscriptionsConfig
from impl.replication.controller import ReplicatedSubscriptionsController
from impl.replication.markers import Snapshot, decode_marker, is_marker
from impl.replication.routing import replicates_to
from impl.storage.api import Entry, InitialPosition, Position
from wire.frames import encode_entry, split_entry
from wire.pulsar_api_pb2 import MessageMetadata

LEDGER = 7


class FakeClock:
    """Time stands still until `advance`; sleepers wake in deadline order."""

    def __init__(self) -> None:
        self.now = 0.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self.sleeps: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def wall_ms(self) -> int:
        return 1_700_000_000_000 + int(self.now * 1000)

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        future = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + seconds, next(self._order), future))
        await future

    async def advance(self, seconds: float) -> None:
        """Move time on, waking each sleeper at its deadline and letting it run until it
        waits again."""
        target = self.now + seconds
        await _settle()
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, future = heapq.heappop(self._sleepers)
            self.now = deadline
            future.set_result(None)
            await _settle()
        self.now = target


async def _settle() -> None:
    for _ in range(10):
        await asyncio.sleep(0)


def data_entry(payload: bytes) -> bytes:
    return encode_entry(MessageMetadata(producer_name="app", sequence_id=0, publish_time=1),
                        payload)


class SimSubscription:
    def __init__(self, name: str, mark_delete: Position, cluster: str,
                 topic: SimTopic) -> None:
        self.name = name
        self.mark_delete_position = mark_delete
        self.moves: list[Position] = []
        self.acked: set[Position] = set()
        """Individually acknowledged above mark-delete."""
        self._cluster = cluster
        self._topic = topic

    async def move_mark_delete(self, position: Position) -> None:
        self.moves.append(position)
        self.mark_delete_position = position

    def acknowledged_after_mark_delete(self) -> Iterable[MessageIdentity]:
        for entry in self._topic.entries:
            if entry.position in self.acked and entry.position > self.mark_delete_position:
                metadata, _ = split_entry(entry.data)
                yield identity_of(self._cluster, entry.position, metadata)


class SimTopic:
    def __init__(self, cluster: str, remotes: Sequence[str]) -> None:
        self.cluster = cluster
        self.entries: list[Entry] = []
        self.connected = dict.fromkeys(remotes, True)
        self.subscriptions: dict[str, SimSubscription] = {}
        self.created: dict[str, Position | InitialPosition] = {}

    def append(self, data: bytes) -> Position:
        position = Position(LEDGER, len(self.entries))
        self.entries.append(Entry(position, data))
        return position

    def publish(self, payload: bytes) -> Position:
        return self.append(data_entry(payload))

    async def write_marker(self, entry: bytes) -> Position:
        return self.append(entry)

    def last_position(self) -> Position | None:
        return self.entries[-1].position if self.entries else None

    def last_published_position(self) -> Position | None:
        data = [e for e in self.entries if not is_marker(split_entry(e.data)[0])]
        return data[-1].position if data else None

    def remote_clusters(self) -> list[str]:
        return list(self.connected)

    def replicator_connected(self, cluster: str) -> bool:
        return self.connected[cluster]

    def subscription(self, name: str) -> SimSubscription | None:
        return self.subscriptions.get(name)

    def replicated_subscriptions(self) -> list[SimSubscription]:
        return list(self.subscriptions.values())

    async def create_subscription(self, name: str,
                                  start: Position | InitialPosition) -> SimSubscription:
        self.created[name] = start
        if isinstance(start, InitialPosition):
            last = self.last_position()
            start = last if start is InitialPosition.LATEST and last else Position(LEDGER, -1)
        self.subscriptions[name] = SimSubscription(name, start, self.cluster, self)
        return self.subscriptions[name]

    def add_subscription(self, name: str) -> SimSubscription:
        """A replicated subscription at the start of the topic."""
        subscription = SimSubscription(name, Position(LEDGER, -1), self.cluster, self)
        self.subscriptions[name] = subscription
        return subscription

    def markers(self) -> list[object]:
        return [decode_marker(e.data) for e in self.entries
                if is_marker(split_entry(e.data)[0])]

    def payloads_after(self, position: Position) -> list[bytes]:
        """Data a consumer reading from `position` (exclusive) gets: markers never."""
        found = []
        for entry in self.entries:
            metadata, payload = split_entry(entry.data)
            if entry.position > position and not is_marker(metadata):
                found.append(payload)
        return found


class Geo:
    """One topic replicated among `clusters`, one controller per cluster."""

    def __init__(self, clusters: Sequence[str],
                 config: ReplicatedSubscriptionsConfig = ReplicatedSubscriptionsConfig(),
                 mutants: Mutants = NONE) -> None:
        self.clock = FakeClock()
        self.topics = {c: SimTopic(c, [r for r in clusters if r != c]) for c in clusters}
        ids = (f"snap-{n}" for n in itertools.count())
        self.controllers = {
            c: ReplicatedSubscriptionsController(self.topics[c], c, config, clock=self.clock,
                                                 mutants=mutants,
                                                 new_snapshot_id=lambda: next(ids))
            for c in clusters}
        self._cursor = {(s, d): 0 for s in clusters for d in clusters if s != d}

    async def replicate(self, src: str, dst: str, count: int | None = None) -> int:
        """Send the next `count` entries src's replicator to dst would send (all if None);
        markers arriving at dst go to its controller, as its replicator would pass them."""
        source, target = self.topics[src], self.topics[dst]
        sent = 0
        while self._cursor[(src, dst)] < len(source.entries) and (count is None or sent < count):
            entry = source.entries[self._cursor[(src, dst)]]
            self._cursor[(src, dst)] += 1
            metadata, payload = split_entry(entry.data)
            if not replicates_to(metadata, dst):
                continue
            metadata.replicated_from = src
            stamp_original_position(metadata, MessageIdentity(src, entry.position))
            data = encode_entry(metadata, payload)
            position = target.append(data)
            if is_marker(metadata):
                await self.controllers[dst].receive_marker(position, data)
            sent += 1
        return sent

    async def replicate_all(self) -> None:
        for _ in range(100):
            moved = 0
            for src, dst in self._cursor:
                moved += await self.replicate(src, dst)
            if not moved:
                return
        raise AssertionError("replication never settles")

    async def consume(self, cluster: str, name: str,
                      ack_through: Position | None = None) -> list[bytes]:
        """A consumer of `name` in `cluster` receives everything past mark-delete and
        acknowledges cumulatively through `ack_through` (default: all). The dispatcher reads
        ahead, so every snapshot marker present feeds the subscription's cache."""
        topic, controller = self.topics[cluster], self.controllers[cluster]
        subscription = topic.subscriptions[name]
        through = ack_through or topic.entries[-1].position
        consumed = []
        for entry in topic.entries:
            if entry.position <= subscription.mark_delete_position:
                continue
            marker = decode_marker(entry.data)
            if isinstance(marker, Snapshot):
                controller.snapshot_cache(name).add_new_snapshot(marker)
            elif marker is None and entry.position <= through:
                consumed.append(split_entry(entry.data)[1])
        subscription.mark_delete_position = through
        await controller.mark_delete_advanced(name, through)
        return consumed

    def failover(self, cluster: str, name: str) -> list[bytes]:
        """What a consumer moving to `cluster` receives: everything past the subscription's
        mark-delete there."""
        topic = self.topics[cluster]
        return topic.payloads_after(topic.subscriptions[name].mark_delete_position)


def published(geo: Geo) -> set[bytes]:
    """Every application message published in any cluster."""
    return {payload for topic in geo.topics.values()
            for entry in topic.entries
            for metadata, payload in [split_entry(entry.data)]
            if not is_marker(metadata) and not metadata.HasField("replicated_from")}
