"""Geo-replication of one loaded topic: its replicators (one per remote cluster in the
namespace's replication clusters, started and stopped as the policies change), its
`ReplicatedSubscriptionsController`, and the broker-facing hooks of `broker_hooks.py`.

`TopicReplication` is also the `ReplicatedTopic` the controller runs against, over the
managed ledger: a subscription is its durable cursor, and a subscription is *replicated*
while its cursor carries Pulsar's property `pulsar.replicated.subscription` (persisted with
the cursor, so it survives restarts and goes with the subscription).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Collection, Coroutine, Iterable
from typing import TYPE_CHECKING, Any

from impl.replication.acknowledged import MessageIdentity, filter_acknowledged, identity_of
from impl.replication.broker_hooks import MarkDeleteMover
from impl.replication.controller import ReplicatedSubscriptionsController
from impl.replication.markers import MalformedMarker, Snapshot, is_marker, marker_of
from impl.replication.replicator import (
    Backoff,
    Replicator,
    ReplicatorLinks,
    replicator_cursor_name,
)
from impl.replication.stopping import stop_task
from impl.resources import NamespacePolicies
from impl.storage.api import (
    Entry,
    InitialPosition,
    ManagedCursor,
    ManagedLedger,
    Position,
    StorageError,
)
from impl.system_cursors import is_system_cursor
from wire.frames import split_entry

if TYPE_CHECKING:
    from impl.metadata.store import Watch
    from impl.naming.topic_name import TopicName
    from impl.replication.service import BrokerReplication

log = logging.getLogger(__name__)

REPLICATED_PROPERTY = "pulsar.replicated.subscription"
"""Pulsar's cursor property marking a replicated subscription."""


class SubscriptionReplication:
    """One subscription as replication sees it: the controller's `ReplicatedSubscription`
    and the dispatcher's `SubscriptionHooks`."""

    def __init__(self, topic: TopicReplication, cursor: ManagedCursor) -> None:
        self._topic = topic
        self.cursor = cursor
        self._notified = cursor.mark_delete_position
        self._identities: dict[Position, MessageIdentity] = {}
        """Extension only: identities of entries dispatched and not yet under mark-delete."""
        self._advancing = asyncio.Lock()
        self._move_mark_delete: MarkDeleteMover = cursor.mark_delete
        """Through the front end's subscription once it is loaded (`attach`)."""

    # --- ReplicatedSubscription ------------------------------------------------------

    @property
    def name(self) -> str:
        return self.cursor.name

    @property
    def mark_delete_position(self) -> Position:
        return self.cursor.mark_delete_position

    @property
    def replicated(self) -> bool:
        return self.cursor.properties.get(REPLICATED_PROPERTY) == 1

    async def move_mark_delete(self, position: Position) -> None:
        await self._move_mark_delete(position)

    def acknowledged_after_mark_delete(self) -> Iterable[MessageIdentity]:
        mark_delete = self.cursor.mark_delete_position
        ranges = self.cursor.individually_deleted
        for position in sorted(self._identities):
            if position > mark_delete and any(start < position <= end for start, end in ranges):
                yield self._identities[position]

    # --- SubscriptionHooks -----------------------------------------------------------

    async def admit(self, entries: list[Entry]) -> list[Entry]:
        controller = self._topic.controller if self.replicated else None
        extension = controller is not None and controller.config.replicate_individually_deleted
        local = self._topic.local_cluster
        markers_dispatched = self._topic.mutants.on("markers-dispatched")
        deliver: list[Entry] = []
        settled: list[Position] = []
        for entry in entries:
            metadata, payload = split_entry(entry.data)
            if is_marker(metadata):
                if controller is not None:
                    self._cache_snapshot(controller, metadata, payload)
                if not markers_dispatched:
                    settled.append(entry.position)  # broker business: never dispatched
                    continue
            if extension:
                self._identities[entry.position] = identity_of(local, entry.position, metadata)
            deliver.append(entry)
        if extension and controller is not None:
            elsewhere = controller.acknowledged_elsewhere(self.name)
            if elsewhere:
                filtered = filter_acknowledged(local, deliver, elsewhere)
                deliver = filtered.deliver
                settled += [e.position for e in filtered.already_acknowledged]
        if settled:
            await self.cursor.delete(settled)
            self.acknowledged()
        return deliver

    def _cache_snapshot(self, controller: ReplicatedSubscriptionsController,
                        metadata: Any, payload: bytes) -> None:
        try:
            marker = marker_of(metadata, payload)
        except MalformedMarker as exc:
            log.warning("%s: unreadable marker skipped: %s", self.name, exc)
            return
        if isinstance(marker, Snapshot) and marker.local_cluster == controller.local_cluster:
            controller.snapshot_cache(self.name).add_new_snapshot(marker)

    def attach(self, move_mark_delete: MarkDeleteMover) -> None:
        self._move_mark_delete = move_mark_delete

    def acknowledged(self) -> None:
        mark_delete = self.cursor.mark_delete_position
        if mark_delete <= self._notified:
            return
        self._notified = mark_delete
        for position in [p for p in self._identities if p <= mark_delete]:
            del self._identities[position]
        controller = self._topic.controller
        if controller is not None and self.replicated:
            self._topic.spawn(self._advance(controller, mark_delete))

    async def _advance(self, controller: ReplicatedSubscriptionsController,
                       mark_delete: Position) -> None:
        async with self._advancing:  # updates leave in mark-delete order
            try:
                await controller.mark_delete_advanced(self.name, mark_delete)
            except StorageError as exc:
                log.warning("%s: subscription update not written: %s", self.name, exc)


class TopicReplication:
    def __init__(self, name: TopicName, ledger: ManagedLedger,
                 service: BrokerReplication) -> None:
        self.name = name
        self.ledger = ledger
        self._service = service
        self.local_cluster = service.local_cluster
        self.mutants = service.mutants
        self._config = service.config
        self._replicators: dict[str, Replicator] = {}
        self._ttl_s: int | None = None
        self._published = ledger.last_confirmed
        self.controller: ReplicatedSubscriptionsController | None = None
        self._subscriptions: dict[str, SubscriptionReplication] = {}
        self._policies_lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._watch: Watch | None = None
        self._closed = False
        self._ready = asyncio.ensure_future(self._start())

    def __repr__(self) -> str:
        return f"TopicReplication({self.name} in {self.local_cluster})"

    # --- lifecycle ---------------------------------------------------------------------

    async def _start(self) -> None:
        try:
            await self._apply(await self._service.policies(self.name))
        except Exception:
            log.exception("%r: replication not set up yet; waiting for a policy change", self)
        if any(s.replicated for s in self._all_subscriptions()):
            self._ensure_controller()
        if not self._closed:
            self._watch = self._service.watch_policies(self.name, self._policies_changed)

    async def ready(self) -> None:
        try:
            await asyncio.shield(self._ready)
        except asyncio.CancelledError:
            if not self._ready.cancelled():
                raise  # our caller was cancelled, not the start-up

    async def close(self) -> None:
        self._closed = True
        self._ready.cancel()
        if self._watch is not None:
            self._watch.cancel()
        await asyncio.gather(*(r.stop() for r in self._replicators.values()))
        await asyncio.gather(*(stop_task(task) for task in list(self._tasks)))

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # --- policies ----------------------------------------------------------------------

    def _policies_changed(self, policies: NamespacePolicies | None) -> None:
        if policies is not None and not self._closed:
            self.spawn(self._apply_until_done(policies))

    async def _apply_until_done(self, policies: NamespacePolicies) -> None:
        backoff = Backoff(self._config.backoff_initial_s, self._config.backoff_max_s)
        while not self._closed:
            try:
                await self._apply(policies)
                return
            except Exception as exc:
                delay = backoff.next()
                log.warning("%r: applying replication policies failed (%s); again in %.1f s",
                            self, exc, delay)
                await asyncio.sleep(delay)

    async def _apply(self, policies: NamespacePolicies) -> None:
        """Start a replicator for every remote cluster the namespace lists and stop (and
        delete the cursor of) every other one (002: `checkReplication`)."""
        async with self._policies_lock:
            self._ttl_s = policies.message_ttl_in_seconds
            wanted = set(policies.replication_clusters) - {self.local_cluster}
            for cluster in sorted(wanted - set(self._replicators)):
                if self._closed:
                    return
                cursor = await self.ledger.open_cursor(replicator_cursor_name(cluster),
                                                       InitialPosition.LATEST)
                replicator = Replicator(str(self.name), cursor, self.local_cluster, cluster,
                                        self._links(cluster), self._config, self.mutants)
                self._replicators[cluster] = replicator
                replicator.start()
                log.info("%r: replicating to %s", self, cluster)
            for cluster in sorted(set(self._replicators) - wanted):
                await self._replicators.pop(cluster).stop()
                await self.ledger.delete_cursor(replicator_cursor_name(cluster))
                log.info("%r: stopped replicating to %s", self, cluster)

    def _links(self, cluster: str) -> ReplicatorLinks:
        return ReplicatorLinks(
            remote_url=lambda: self._service.broker_service_url(cluster),
            remote_marker=self._remote_marker,
            data_seen=self._data_seen,
            message_ttl_s=lambda: self._ttl_s,
            client_token=self._service.client_token)

    def _data_seen(self, position: Position) -> None:
        if self._published is None or position > self._published:
            self._published = position

    async def _remote_marker(self, position: Position, entry: bytes) -> None:
        # As Pulsar: a marker from another cluster starts the controller if it is not
        # running, so a cluster without replicated subscriptions still answers snapshots.
        controller = self._ensure_controller()
        if controller is not None:
            await controller.receive_marker(position, entry)

    def _ensure_controller(self) -> ReplicatedSubscriptionsController | None:
        if self.controller is None and self._config.enable_replicated_subscriptions \
                and not self._closed:
            self.controller = ReplicatedSubscriptionsController(
                self, self.local_cluster, self._config.subscriptions,
                mutants=self._service.mutants)
            self.spawn(self._run_controller(self.controller))
        return self.controller

    async def _run_controller(self, controller: ReplicatedSubscriptionsController) -> None:
        backoff = Backoff(self._config.backoff_initial_s, self._config.backoff_max_s)
        while True:
            try:
                await controller.run()
            except StorageError as exc:  # a marker could not be written: the timer goes on
                delay = backoff.next()
                log.warning("%r: snapshot timer: %s; again in %.1f s", self, exc, delay)
                await asyncio.sleep(delay)

    # --- ReplicatedTopic (for the controller) -----------------------------------------

    async def write_marker(self, entry: bytes) -> Position:
        return await self.ledger.add_entry(entry)

    def last_position(self) -> Position | None:
        return self.ledger.last_confirmed

    def last_published_position(self) -> Position | None:
        return self._published

    def remote_clusters(self) -> Collection[str]:
        return list(self._replicators)

    def replicator_connected(self, cluster: str) -> bool:
        replicator = self._replicators.get(cluster)
        return replicator is not None and replicator.connected

    def subscription(self, name: str) -> SubscriptionReplication | None:
        cursor = self.ledger.cursors().get(name)
        if cursor is None or is_system_cursor(name):
            return None
        return self._state(cursor)

    def replicated_subscriptions(self) -> Iterable[SubscriptionReplication]:
        return [s for s in self._all_subscriptions() if s.replicated]

    async def create_subscription(self, name: str,
                                  start: Position | InitialPosition) -> SubscriptionReplication:
        initial = start if isinstance(start, InitialPosition) else InitialPosition.EARLIEST
        cursor = await self.ledger.open_cursor(name, initial)
        await cursor.put_property(REPLICATED_PROPERTY, 1)
        if isinstance(start, Position) and start > cursor.mark_delete_position:
            await cursor.mark_delete(start)
        log.info("%r: created replicated subscription %s at %s", self, name,
                 cursor.mark_delete_position)
        return self._state(cursor)

    def _all_subscriptions(self) -> list[SubscriptionReplication]:
        return [self._state(c) for name, c in self.ledger.cursors().items()
                if not is_system_cursor(name)]

    def _state(self, cursor: ManagedCursor) -> SubscriptionReplication:
        state = self._subscriptions.get(cursor.name)
        if state is None or state.cursor is not cursor:
            state = SubscriptionReplication(self, cursor)
            self._subscriptions[cursor.name] = state
        return state

    # --- TopicHooks (for the front end) ------------------------------------------------

    def subscription_hooks(self, cursor: ManagedCursor) -> SubscriptionReplication:
        return self._state(cursor)

    async def subscribed(self, cursor: ManagedCursor, replicate_state: bool) -> None:
        if not replicate_state:
            return
        if not self._config.enable_replicated_subscriptions:
            log.warning("%r: %s asks for replicated state, but replicated subscriptions "
                        "are disabled on this broker", self, cursor.name)
            return
        if cursor.properties.get(REPLICATED_PROPERTY) != 1:
            await cursor.put_property(REPLICATED_PROPERTY, 1)
        self._ensure_controller()

    def add_stats(self, stats: dict[str, Any]) -> None:
        stats["replication"] = {c: r.stats() for c, r in sorted(self._replicators.items())}
        subscriptions = stats.setdefault("subscriptions", {})
        controller = self.controller
        for state in self._all_subscriptions():
            entry = subscriptions.setdefault(state.name, {})
            entry["isReplicated"] = state.replicated
            if controller is not None and state.replicated:
                cache = controller.snapshot_cache(state.name)
                used = cache.last_used
                entry["replicatedSnapshots"] = {
                    "cached": len(cache.snapshots()),
                    "lastUsedSnapshotId": used.snapshot_id if used else None,
                    "lastUsedSnapshotPosition": str(used.local_position) if used else None,
                }
        if controller is not None:
            last = controller.last_snapshot
            stats["replicatedSubscriptionsController"] = {
                "completedSnapshots": controller.completed_snapshots,
                "pendingSnapshots": len(controller.pending_snapshots),
                "lastSnapshotId": last.snapshot_id if last else None,
                "lastSnapshotPosition": str(last.local_position) if last else None,
                "lastSnapshotRounds": controller.last_snapshot_rounds,
            }
