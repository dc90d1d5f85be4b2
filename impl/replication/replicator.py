"""One topic's replication to one remote cluster (002: `PersistentReplicator`): a durable
cursor on the local managed ledger and a producer on the remote cluster.

The replicator reads entries from its cursor, decides for each whether it goes to the
remote cluster, sends those that do, and acknowledges an entry on the cursor only once the
remote cluster's receipt came back (or the entry was skipped), so an entry is never lost
between clusters: after a broken connection it rewinds and sends again (the remote may get
a duplicate, as in Pulsar). Skipped, in 002's order:

- entries that replication brought here (`replicated_from` set): a replicated message is
  never replicated again. A marker among them that came from *this* replicator's remote
  cluster is handed to the replicated-subscriptions controller first (002:
  `checkReplicatedSubscriptionMarker`);
- entries whose `replicate_to` leaves the remote cluster out (`routing.replicates_to`);
- expired messages, when the namespace has a message TTL.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from impl.mutants import NONE, Mutants
from impl.replication.acknowledged import MessageIdentity, stamp_original_position
from impl.replication.config import GeoReplicationConfig
from impl.replication.markers import MalformedMarker, is_marker
from impl.replication.remote_producer import RemoteProducer, RemoteUnavailable
from impl.replication.routing import replicates_to
from impl.replication.stopping import stop_task
from impl.storage.api import Entry, ManagedCursor, Position, StorageError
from impl.system_cursors import REPLICATOR_PREFIX
from wire.frames import MalformedFrame, encode_entry, split_entry

log = logging.getLogger(__name__)


def replicator_cursor_name(remote_cluster: str) -> str:
    return f"{REPLICATOR_PREFIX}{remote_cluster}"


def replicator_producer_name(local_cluster: str) -> str:
    """Pulsar's name for the producer a replicator creates in the remote cluster."""
    return f"{REPLICATOR_PREFIX}{local_cluster}"


@dataclass(frozen=True)
class ReplicatorLinks:
    """What a replicator needs from its topic (as callables, so it knows nothing else) and
    from its broker."""

    remote_url: Callable[[], Awaitable[str]]
    """The remote cluster's `brokerServiceUrl`, read from the cluster metadata each time a
    connection is made (an operator may have changed it)."""
    remote_marker: Callable[[Position, bytes], Awaitable[None]]
    """A marker replicated here from the remote cluster (`controller.receive_marker`)."""
    data_seen: Callable[[Position], None]
    """A message that is not a marker, local or replicated: the topic's last published
    position for snapshots."""
    message_ttl_s: Callable[[], int | None]
    """The namespace's message TTL in seconds, None or 0 for none."""
    client_token: str | None = None
    """The token this broker presents to the remote cluster in CONNECT
    (`--broker-client-token-file`); None: nothing, which a remote cluster with
    authentication on refuses."""


class Backoff:
    """Exponential retry delays, doubling from `initial` up to `maximum`."""

    def __init__(self, initial: float, maximum: float) -> None:
        self.initial, self.maximum = initial, maximum
        self._next = initial

    def next(self) -> float:
        delay, self._next = self._next, min(self._next * 2, self.maximum)
        return delay

    def reset(self) -> None:
        self._next = self.initial


class Replicator:
    def __init__(self, topic: str, cursor: ManagedCursor, local_cluster: str,
                 remote_cluster: str, links: ReplicatorLinks,
                 config: GeoReplicationConfig, mutants: Mutants = NONE) -> None:
        self.topic = topic
        self._sends_on_replicated = mutants.on("replicated-from-ignored")
        self._acks_before_receipts = mutants.on("replicator-acks-before-receipt")
        self.cursor = cursor
        self.local_cluster = local_cluster
        self.remote_cluster = remote_cluster
        self._links = links
        self._config = config
        self._stamp_origin = config.subscriptions.replicate_individually_deleted
        self._producer: RemoteProducer | None = None
        self._backoff = Backoff(config.backoff_initial_s, config.backoff_max_s)
        self._task: asyncio.Task[None] | None = None
        self.messages_out = 0
        self.messages_expired = 0
        self._oldest_unsent_ms: int | None = None
        """Publish time of the first entry of the batch under way: replication delay."""
        self._caught_up_ms = _now_ms()
        self.last_error = ""

    def __repr__(self) -> str:
        return f"Replicator({self.topic} {self.local_cluster} -> {self.remote_cluster})"

    @property
    def connected(self) -> bool:
        """Whether the producer on the remote cluster is up (snapshots wait for it)."""
        return self._producer is not None and self._producer.connected

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=repr(self))

    async def stop(self) -> None:
        if self._task is not None:
            await stop_task(self._task)
            self._task = None
        await self._disconnect()

    # --- the loop ------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            try:
                if not self.connected:
                    await self._connect()
                await self._replicate_batch()
            except asyncio.CancelledError:
                raise
            except (RemoteUnavailable, StorageError) as exc:
                await self._retry_later(exc)
            except Exception as exc:  # never let one bad entry stop replication for good
                log.exception("%r failed", self)
                await self._retry_later(exc)

    async def _retry_later(self, exc: BaseException) -> None:
        self.last_error = str(exc)
        await self._disconnect()
        self.cursor.rewind()  # what was read but not receipted is sent again
        delay = self._backoff.next()
        log.warning("%r: %s; retrying in %.1f s", self, exc, delay)
        await asyncio.sleep(delay)

    async def _connect(self) -> None:
        url = await self._links.remote_url()
        if not url:
            raise RemoteUnavailable(f"cluster {self.remote_cluster} has no brokerServiceUrl "
                                    "in this cluster's metadata (PUT /admin/v2/clusters/"
                                    f"{self.remote_cluster})")
        self._producer = await RemoteProducer.connect(
            url, self.topic, replicator_producer_name(self.local_cluster),
            self._config.connect_timeout_s, self._config.keepalive_s, self._links.client_token)
        self._backoff.reset()
        self.last_error = ""
        log.info("%r connected to %s", self, self._producer.broker_url)

    async def _disconnect(self) -> None:
        producer, self._producer = self._producer, None
        if producer is not None:
            await producer.close()

    async def _wait_for_entries(self, producer: RemoteProducer) -> None:
        """Until the cursor has more, or the remote connection is lost (so that the
        replicator reconnects even on a topic where nothing is written meanwhile)."""
        more = asyncio.ensure_future(self.cursor.wait_for_more())
        either: list[asyncio.Future[Any]] = [more, producer.lost]
        try:
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        finally:
            more.cancel()

    async def _replicate_batch(self) -> None:
        producer = self._producer
        assert producer is not None
        if not self.cursor.has_more():
            self._oldest_unsent_ms = None
            self._caught_up_ms = _now_ms()
            await self._wait_for_entries(producer)
            if not producer.connected:
                raise RemoteUnavailable(f"lost {self.remote_cluster}: "
                                        f"{producer.lost.result()}")
            return
        entries = await self.cursor.read_entries(self._config.read_batch)
        settled: list[Position] = []
        receipts: list[asyncio.Future[Position]] = []
        for entry in entries:
            outgoing = await self._outgoing(entry)
            if outgoing is not None:
                receipts.append(producer.send(outgoing))
            settled.append(entry.position)
        if self._acks_before_receipts and settled:
            # The batch counts as replicated once it is sent: a remote that goes away
            # before storing it leaves it behind for good, as no rewind reaches it.
            await self.cursor.delete(settled)
            settled = []
        try:
            await asyncio.gather(*receipts)
        finally:
            for receipt in receipts:  # the others' failures are the same failure
                if receipt.done() and not receipt.cancelled():
                    receipt.exception()
        self.messages_out += len(receipts)
        if settled:
            await self.cursor.delete(settled)
        self._oldest_unsent_ms = None

    async def _outgoing(self, entry: Entry) -> bytes | None:
        """The bytes to send for a stored entry, or None to skip it."""
        try:
            metadata, payload = split_entry(entry.data)
        except MalformedFrame as exc:  # as Pulsar: an unreadable entry is dropped, not retried
            log.error("%r: unreadable entry at %s skipped: %s", self, entry.position, exc)
            return None
        marker = is_marker(metadata)
        if not marker:
            self._links.data_seen(entry.position)
            if self._oldest_unsent_ms is None:
                self._oldest_unsent_ms = metadata.publish_time
        if metadata.HasField("replicated_from"):
            if marker and metadata.replicated_from == self.remote_cluster:
                try:
                    await self._links.remote_marker(entry.position, entry.data)
                except MalformedMarker as exc:
                    log.warning("%r: unreadable marker at %s skipped: %s", self,
                                entry.position, exc)
            if marker or not self._sends_on_replicated:
                return None
        if not replicates_to(metadata, self.remote_cluster,
                             honour_origin=not self._sends_on_replicated):
            return None
        ttl = self._links.message_ttl_s()
        if not marker and ttl and metadata.publish_time + ttl * 1000 < _now_ms():
            self.messages_expired += 1
            return None
        metadata.replicated_from = self.local_cluster
        if self._stamp_origin and not marker:
            stamp_original_position(metadata, MessageIdentity(self.local_cluster,
                                                              entry.position))
        return encode_entry(metadata, payload)

    # --- stats ---------------------------------------------------------------------------

    def stats(self) -> dict[str, object]:
        """Pulsar's `ReplicatorStats` fields that we can fill honestly."""
        backlog = self.cursor.backlog()
        if backlog == 0:
            delay = 0.0
        else:
            since = self._oldest_unsent_ms or self._caught_up_ms
            delay = max(0.0, (_now_ms() - since) / 1000)
        return {
            "msgBacklog": backlog,
            "replicationBacklog": backlog,
            "replicationDelayInSeconds": round(delay, 3),
            "connected": self.connected,
            "outboundConnection": self._producer.broker_url if self._producer else "",
            "msgOutCounter": self.messages_out,
            "msgExpired": self.messages_expired,
            "lastError": self.last_error,
        }


def _now_ms() -> int:
    return time.time_ns() // 1_000_000
