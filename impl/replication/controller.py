"""One topic's replicated subscriptions: snapshots on a timer, answers to other clusters'
requests, and subscription updates in both directions (PIP-33; 002's walk-through of
`ReplicatedSubscriptionsController`)."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Mapping

from impl.mutants import NONE, Mutants
from impl.replication.acknowledged import (
    AcknowledgedElsewhere,
    AcknowledgedRange,
    acknowledged_ranges,
)
from impl.replication.config import ReplicatedSubscriptionsConfig
from impl.replication.interfaces import SYSTEM_CLOCK, Clock, ReplicatedTopic
from impl.replication.markers import (
    Marker,
    Snapshot,
    SnapshotRequest,
    SnapshotResponse,
    SubscriptionUpdate,
    encode_marker,
    marker_of,
)
from impl.replication.snapshot_builder import ReplicatedSubscriptionsSnapshotBuilder
from impl.replication.snapshot_cache import ReplicatedSubscriptionSnapshotCache
from impl.storage.api import InitialPosition, Position
from wire.frames import split_entry


def _new_snapshot_id() -> str:
    return str(uuid.uuid4())


class ReplicatedSubscriptionsController:
    """Created by the broker for a topic that has at least one replicated subscription.

    The broker runs `run()` as a task (cancel it to stop), passes every marker entry that
    replication brought in to `receive_marker`, every snapshot marker a replicated
    subscription reads to `snapshot_cache(name).add_new_snapshot`, and every mark-delete
    move of a replicated subscription to `mark_delete_advanced`.
    """

    def __init__(self, topic: ReplicatedTopic, local_cluster: str,
                 config: ReplicatedSubscriptionsConfig = ReplicatedSubscriptionsConfig(), *,
                 clock: Clock = SYSTEM_CLOCK, mutants: Mutants = NONE,
                 new_snapshot_id: Callable[[], str] = _new_snapshot_id) -> None:
        self.local_cluster = local_cluster
        self.config = config
        self._topic = topic
        self._clock = clock
        self._mutants = mutants
        self._new_snapshot_id = new_snapshot_id
        self._pending: dict[str, ReplicatedSubscriptionsSnapshotBuilder] = {}
        self.completed_snapshots = 0
        self.last_snapshot: Snapshot | None = None
        self.last_snapshot_rounds = 0
        """Request rounds the latest completed snapshot took (2 beyond two clusters)."""
        self._covered: Position | None = None
        """Last published position when the latest completed snapshot started."""
        self._caches: dict[str, ReplicatedSubscriptionSnapshotCache] = {}
        self._applied: dict[str, Mapping[str, Position]] = {}
        """Per local subscription: the cluster positions of the last update it sent."""
        self._ranges_sent: dict[str, tuple[AcknowledgedRange, ...]] = {}
        self._ranges_received: dict[tuple[str, str], tuple[AcknowledgedRange, ...]] = {}
        """Per (subscription, sending cluster): what it last said it acknowledged."""
        self._acknowledged: dict[str, AcknowledgedElsewhere] = {}

    @property
    def pending_snapshots(self) -> Mapping[str, ReplicatedSubscriptionsSnapshotBuilder]:
        return dict(self._pending)

    # ---- the timer -----------------------------------------------------------------------

    async def run(self) -> None:
        """Tick now and then every `snapshot_frequency_ms`, until cancelled."""
        while True:
            await self.tick()
            await self._clock.sleep(self.config.snapshot_frequency_ms / 1000)

    async def tick(self) -> str | None:
        """One timer beat: abandon timed-out snapshots, send acknowledgement updates (our
        extension), start a snapshot if one is due. Returns the new snapshot's id."""
        self._drop_timed_out()
        if self.config.replicate_individually_deleted:
            await self._send_changed_acknowledgements()
        return await self._start_snapshot()

    async def _start_snapshot(self) -> str | None:
        remotes = self._topic.remote_clusters()
        published = self._topic.last_published_position()
        if not remotes or published is None:
            return None  # nobody to ask, or nothing any subscription could move past
        if not self.completed_snapshots and self._pending:
            # As Pulsar: until one snapshot has completed, one is asked at a time. A cluster
            # that never answers (its replicated subscriptions off, or its answers never
            # sent back) is asked again only once the timeout abandons the request.
            return None
        if self.completed_snapshots and published == self._covered:
            return None  # nothing new since the last completed snapshot
        in_reach = [c for c in remotes if self._topic.replicator_connected(c)]
        if len(in_reach) < len(remotes):
            # PIP-33 limitations: no snapshot while a cluster is unreachable. One taken
            # among the others alone (the mutant) would let an update move their copies
            # past the unreachable cluster's messages that reached them but not us.
            if not self._mutants.on("snapshot-while-disconnected") or not in_reach:
                return None
            remotes = in_reach
        builder = ReplicatedSubscriptionsSnapshotBuilder(
            self._new_snapshot_id(), self.local_cluster, remotes, self._clock.monotonic(),
            published, self._mutants)
        self._pending[builder.snapshot_id] = builder
        await self._write(builder.request())
        return builder.snapshot_id

    def _drop_timed_out(self) -> None:
        # PIP-33: a snapshot a region does not answer within the timeout is aborted. The
        # mutant keeps every one: a request that was never written, or never answered,
        # holds its builder for ever, and a topic's first such request stops its snapshots
        # for good (`_start_snapshot`).
        if self._mutants.on("snapshot-never-times-out"):
            return
        deadline = self._clock.monotonic() - self.config.snapshot_timeout_s
        for snapshot_id, builder in list(self._pending.items()):
            if builder.started_at <= deadline:
                del self._pending[snapshot_id]

    # ---- markers from other clusters -----------------------------------------------------

    async def receive_marker(self, position: Position, entry: bytes) -> None:
        """An entry stored here at `position`. Acts on markers replication brought from
        another cluster; passes over everything else (our own markers included). Raises
        `MalformedMarker` for a marker that cannot be read: log it and go on."""
        metadata, payload = split_entry(entry)
        source = metadata.replicated_from
        if not source or source == self.local_cluster:
            return
        marker: Marker | None = marker_of(metadata, payload)
        if isinstance(marker, SnapshotRequest):
            await self._answer(position, marker)
        elif isinstance(marker, SnapshotResponse) and marker.requester == self.local_cluster:
            await self._record_response(position, marker)
        elif isinstance(marker, SubscriptionUpdate):
            await self._apply_update(source, marker)

    async def _answer(self, position: Position, request: SnapshotRequest) -> None:
        # The request itself is stored at `position`, so the topic's last position is at
        # least that.
        last = self._topic.last_position() or position
        await self._write(SnapshotResponse(request.snapshot_id, self.local_cluster, last,
                                           requester=request.source_cluster))

    async def _record_response(self, position: Position, response: SnapshotResponse) -> None:
        self._drop_timed_out()
        builder = self._pending.get(response.snapshot_id)
        if builder is None:
            return  # timed out, or already complete
        outcome = builder.receive_response(response, position)
        if isinstance(outcome, Snapshot):
            del self._pending[builder.snapshot_id]
            self.completed_snapshots += 1
            self.last_snapshot, self.last_snapshot_rounds = outcome, builder.round
            self._covered = builder.published_position
        if outcome is not None:
            await self._write(outcome)

    async def _apply_update(self, source: str, update: SubscriptionUpdate) -> None:
        name = update.subscription_name
        if self.config.replicate_individually_deleted:
            self._ranges_received[(name, source)] = update.acknowledged
            self._acknowledged.pop(name, None)
        target = update.clusters.get(self.local_cluster)
        if target is None:
            return
        subscription = self._topic.subscription(name)
        if subscription is None:
            # 002: an update creates a missing subscription, where the snapshot says.
            start = (InitialPosition.LATEST if self._mutants.on("update-creates-at-latest")
                     else target)
            await self._topic.create_subscription(name, start)
        elif target > subscription.mark_delete_position:
            await subscription.move_mark_delete(target)

    # ---- local subscriptions -------------------------------------------------------------

    def snapshot_cache(self, subscription_name: str) -> ReplicatedSubscriptionSnapshotCache:
        """The subscription's cache, created on first use."""
        cache = self._caches.get(subscription_name)
        if cache is None:
            cache = ReplicatedSubscriptionSnapshotCache(
                subscription_name, self.config.max_cached_snapshots_per_subscription,
                self._mutants)
            self._caches[subscription_name] = cache
        return cache

    async def mark_delete_advanced(self, subscription_name: str,
                                   mark_delete: Position) -> Snapshot | None:
        """A local replicated subscription's mark-delete moved: when it passed a snapshot,
        tell every cluster where to move its copy. Returns the snapshot used."""
        snapshot = self.snapshot_cache(subscription_name).advanced_mark_delete(mark_delete)
        if snapshot is not None:
            self._applied[subscription_name] = snapshot.clusters
            await self._send_update(subscription_name, self._current_ranges(subscription_name))
        return snapshot

    def forget_subscription(self, subscription_name: str) -> None:
        """The subscription was deleted here."""
        for held in (self._caches, self._applied, self._ranges_sent, self._acknowledged):
            held.pop(subscription_name, None)
        for key in [k for k in self._ranges_received if k[0] == subscription_name]:
            del self._ranges_received[key]

    async def _send_changed_acknowledgements(self) -> None:
        for subscription in self._topic.replicated_subscriptions():
            ranges = self._current_ranges(subscription.name)
            if ranges != self._ranges_sent.get(subscription.name, ()):
                await self._send_update(subscription.name, ranges)

    async def _send_update(self, subscription_name: str,
                           ranges: tuple[AcknowledgedRange, ...]) -> None:
        self._ranges_sent[subscription_name] = ranges
        clusters = self._applied.get(subscription_name, {})
        await self._write(SubscriptionUpdate(subscription_name, clusters, ranges))

    def _current_ranges(self, subscription_name: str) -> tuple[AcknowledgedRange, ...]:
        """What the subscription acknowledged individually, when the extension is on."""
        subscription = self._topic.subscription(subscription_name)
        if subscription is None or not self.config.replicate_individually_deleted:
            return ()
        return acknowledged_ranges(subscription.acknowledged_after_mark_delete(),
                                   self.config.max_acknowledged_ranges)

    def acknowledged_elsewhere(self, subscription_name: str) -> AcknowledgedElsewhere:
        """Our extension: what the other clusters last reported acknowledged individually for
        this subscription; give it to `acknowledged.filter_acknowledged` before dispatch."""
        known = self._acknowledged.get(subscription_name)
        if known is None:
            known = AcknowledgedElsewhere(itertools.chain.from_iterable(
                ranges for (name, _), ranges in self._ranges_received.items()
                if name == subscription_name))
            self._acknowledged[subscription_name] = known
        return known

    async def _write(self, marker: Marker) -> None:
        await self._topic.write_marker(encode_marker(marker, self._clock.wall_ms()))
