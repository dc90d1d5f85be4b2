"""Lookups, topic loading and unloading: the broker's ownership service (Pulsar's
`NamespaceService`), for the protocol front end and the admin API.

- A lookup answers with the bundle's owner. A free bundle goes to the broker that
  rendezvous hashing picks among the live brokers: when that is us we claim it now; when
  it is another broker we redirect there with `authoritative`, and a broker asked
  authoritatively claims the bundle itself, so a lookup never bounces between brokers.
- A topic is served (its managed ledger opened) only in a bundle we own. Opening the
  ledger as the new owner fences the previous owner's ledger: that, not the timing of
  ZooKeeper, is what keeps a broker that lost a topic from acknowledging writes.
- Unloading closes the topic's clients (they look it up again), closes its ledger and
  deletes the ownership node last, so the next owner cannot start while we still serve.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol, TypeVar

from impl.naming.bundles import NamespaceBundle, in_bundle
from impl.naming.topic_name import NamespaceName, TopicName
from impl.ownership.brokers import BrokerInfo, BrokerRegistry, choose_broker
from impl.ownership.ownership_cache import BundleState, OwnershipCache
from impl.partitioned_topics import PartitionedTopicResources
from impl.resources import PulsarResources
from impl.storage.api import ManagedLedger

log = logging.getLogger(__name__)

T = TypeVar("T")


class NotOwner(Exception):
    """This broker does not serve the topic's bundle (now); the client must look it up."""

    def __init__(self, topic: TopicName | str, bundle: NamespaceBundle | None = None) -> None:
        where = f" (bundle {bundle})" if bundle is not None else ""
        super().__init__(f"this broker does not own {topic}{where}")
        self.topic = topic


class NoBrokerAvailable(Exception):
    """No live broker could take a free bundle."""


@dataclass(frozen=True)
class LookupResult:
    owner: BrokerInfo
    is_self: bool
    """Connect here (True) or redirect to `owner` (False)."""
    authoritative: bool
    """For a redirect: True when `owner` is only the chosen candidate for a free bundle
    and must claim it when asked; False when `owner` owns it already."""


class LedgerOpener(Protocol):
    async def __call__(self, topic: TopicName) -> ManagedLedger: ...


class TopicCloser(Protocol):
    """The front end's part of an unload: close every producer and consumer of the topic
    (CLOSE_PRODUCER / CLOSE_CONSUMER, so clients look the topic up again)."""

    async def __call__(self, topic: TopicName, /) -> None: ...


class NamespaceService:
    def __init__(
        self,
        resources: PulsarResources,
        ownership: OwnershipCache,
        registry: BrokerRegistry,
        open_ledger: LedgerOpener,
        *,
        executor: ThreadPoolExecutor | None = None,
    ) -> None:
        self.resources = resources
        self.ownership = ownership
        self.registry = registry
        self.me = ownership.me
        self._open_ledger = open_ledger
        self._close_clients: TopicCloser | None = None
        self._executor = executor or ThreadPoolExecutor(8, thread_name_prefix="ownership")
        self._ledgers: dict[TopicName, ManagedLedger] = {}
        self._without_ledger: set[TopicName] = set()
        """Non-persistent topics served here: owned like the others, with no ledger."""
        self._partitioned = PartitionedTopicResources(resources.store)
        self._loading: dict[TopicName, asyncio.Future[ManagedLedger]] = {}

    def set_topic_closer(self, close_clients: TopicCloser) -> None:
        """The front end registers how it closes a topic's clients (it is built after us)."""
        self._close_clients = close_clients

    async def _blocking(self, fn: Callable[..., T], *args: object) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)

    # --- bundles and lookups -----------------------------------------------------------

    async def bundle_of(self, topic: TopicName) -> NamespaceBundle:
        """The topic's bundle; `ResourceNotFound` when its namespace does not exist."""
        bundles = await self._blocking(self.resources.bundles, topic.namespace_name)
        return bundles.find(topic)

    async def lookup(self, topic: TopicName, authoritative: bool = False) -> LookupResult:
        bundle = await self.bundle_of(topic)
        return await self.lookup_bundle(bundle, authoritative)

    async def lookup_bundle(self, bundle: NamespaceBundle,
                            authoritative: bool = False) -> LookupResult:
        if self.ownership.is_owned(bundle):
            return LookupResult(self.me, True, True)
        owner = await self._blocking(self.ownership.owner, bundle)
        if owner is None and not authoritative:
            live = await self._blocking(self.registry.live_brokers)
            candidate = choose_broker(bundle, live) or self.me
            if candidate != self.me:
                return LookupResult(candidate, False, True)
        if owner is None or owner == self.me:
            owner = await self._blocking(self.ownership.try_acquire, bundle)
        return LookupResult(owner, owner == self.me, False)

    # --- what a namespace holds ----------------------------------------------------------

    async def partitions(self, topic: TopicName) -> int:
        """The partition count stored for `topic`; 0 when it is not partitioned."""
        return await self._blocking(self._partitioned.partitions, topic)

    async def persistent_topics(self, namespace: NamespaceName) -> list[str]:
        """Every persistent topic of the namespace, partitions included (Pulsar's
        `getListOfPersistentTopics`)."""
        return await self._blocking(self.resources.topics, namespace)

    # --- serving topics ----------------------------------------------------------------

    async def serve_without_ledger(self, topic: TopicName) -> None:
        """Check that we may serve `topic`, which keeps no ledger (a non-persistent one),
        and remember it, so that unloading its bundle closes its clients; `NotOwner`
        otherwise."""
        self._refuse_if_unloading(topic)
        await self._owned_bundle(topic)
        self._without_ledger.add(topic)

    def loaded_topics(self) -> dict[TopicName, ManagedLedger]:
        return dict(self._ledgers)

    async def load_topic(self, topic: TopicName) -> ManagedLedger:
        """The topic's managed ledger, opened once per topic while we own its bundle;
        `NotOwner` otherwise, also while its bundle unloads: a client (a remote
        cluster's replicator, say) that comes back in that window must not get the topic
        the unload is closing, nor a new one the unload would never close."""
        self._refuse_if_unloading(topic)
        if topic in self._ledgers:
            return self._ledgers[topic]
        pending = self._loading.get(topic)
        if pending is not None:
            return await asyncio.shield(pending)
        future: asyncio.Future[ManagedLedger] = asyncio.get_running_loop().create_future()
        self._loading[topic] = future
        try:
            ledger = await self._open_owned(topic)
            self._ledgers[topic] = ledger
            future.set_result(ledger)
            return ledger
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: waiters re-raise it, nobody else must
            raise
        finally:
            del self._loading[topic]

    def _refuse_if_unloading(self, topic: TopicName) -> None:
        for bundle, state in self.ownership.owned_bundles().items():
            if state == BundleState.UNLOADING and in_bundle(topic, bundle):
                raise NotOwner(topic, bundle)

    async def _owned_bundle(self, topic: TopicName) -> NamespaceBundle:
        bundle = await self.bundle_of(topic)
        if not self.ownership.is_owned(bundle):
            raise NotOwner(topic, bundle)
        return bundle

    async def _open_owned(self, topic: TopicName) -> ManagedLedger:
        bundle = await self._owned_bundle(topic)
        ledger = await self._open_ledger(topic)
        if not self.ownership.is_owned(bundle):
            # Unloaded (or the session lost) while the ledger opened.
            await ledger.close()
            raise NotOwner(topic, bundle)
        log.info("loaded topic %s (bundle %s)", topic, bundle)
        return ledger

    async def unload_topic(self, topic: TopicName) -> None:
        """Close the topic's clients and its ledger; the bundle stays ours, so clients
        come back here (Pulsar's topic unload)."""
        if self._close_clients is not None:
            await self._close_clients(topic)
        self._without_ledger.discard(topic)
        ledger = self._ledgers.pop(topic, None)
        if ledger is not None:
            await ledger.close()
            log.info("unloaded topic %s", topic)

    async def unload_bundle(self, bundle: NamespaceBundle) -> None:
        """Give the bundle up: stop loading topics in it, unload those loaded, then
        delete the ownership node (when our session holds it)."""
        self.ownership.begin_unload(bundle)
        topics = [t for t in (*self._ledgers, *self._without_ledger) if in_bundle(t, bundle)]
        for topic in topics:
            try:
                await self.unload_topic(topic)
            except Exception:
                log.exception("unloading %s failed; dropping it", topic)
                self._ledgers.pop(topic, None)
        await self._blocking(self.ownership.release, bundle)

    async def topic_lost(self, topic: TopicName) -> None:
        """The topic's ledger was fenced by another broker: we lost the bundle behind our
        back (a pause, an expired session). Unload it so clients find the new owner."""
        bundle = await self.bundle_of(topic)
        log.warning("topic %s was fenced by another owner; unloading bundle %s", topic, bundle)
        await self.unload_bundle(bundle)

    async def delete_topic(self, topic: TopicName) -> None:
        """Unload the topic and delete its ledgers and cursors (we must own it)."""
        ledger = await self.load_topic(topic)
        if self._close_clients is not None:
            await self._close_clients(topic)
        self._ledgers.pop(topic, None)
        await ledger.delete()
        log.info("deleted topic %s", topic)

    async def close(self) -> None:
        """Unload every bundle we own (a clean shutdown hands them over at once)."""
        for bundle, state in self.ownership.owned_bundles().items():
            if state != BundleState.UNLOADING:
                await self.unload_bundle(bundle)
        self._executor.shutdown(wait=False)
