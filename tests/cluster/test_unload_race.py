"""A bundle unload against the replication that runs on its topics (a tenant migration's
switch hung here): the unload ends, and a client that comes back while it runs (a remote
cluster's replicator reconnects 0.1 s after its producer was closed) is sent away instead
of loading the topic again into the bundle being given up.

The ownership runs over a real ZooKeeper; the managed ledger is a stand-in (only its
closing matters here), the replication hooks model the remote replicator coming back."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from impl.broker.schemas.registry import SchemaRegistry
from impl.broker.service import BrokerService
from impl.metadata.store import MetadataStore
from impl.naming.topic_name import TopicName
from impl.ownership.brokers import BrokerInfo, BrokerRegistry
from impl.ownership.namespace_service import NamespaceService, NotOwner
from impl.ownership.ownership_cache import OwnershipCache
from impl.replication.broker_hooks import NoReplication, TopicHooks
from impl.replication.config import GeoReplicationConfig
from impl.replication.replicator import Replicator, ReplicatorLinks
from impl.resources import ClusterData, NamespacePolicies, PulsarResources, TenantInfo
from impl.storage.api import ManagedLedger
from tests.broker.memory_schemas import MemorySchemas

pytestmark = pytest.mark.zk

ME = BrokerInfo("pulsar://127.0.0.1:1001", "http://127.0.0.1:2001")
TOPIC = TopicName.parse("persistent://moving/ns/t")
NOWHERE = "pulsar://127.0.0.1:9"
"""The discard port: connecting is refused at once."""


class _Ledger:
    """Only what loading and unloading a topic do to a managed ledger: list its cursors
    (none here; deduplication looks for its own) and close it."""

    def __init__(self) -> None:
        self.closed = False

    def cursors(self) -> dict[str, object]:
        return {}

    async def close(self) -> None:
        self.closed = True


class _ReplicatorComesBack(NoReplication):
    """Closing the topic's replication is when the remote cluster's replicator, whose
    producer was just closed, asks for the topic again."""

    def __init__(self) -> None:
        self.service: BrokerService | None = None
        self.comeback: list[object] = []

    def for_topic(self, name: TopicName, ledger: ManagedLedger) -> TopicHooks:
        return self

    async def close(self) -> None:
        assert self.service is not None
        if not self.comeback:  # the first close only; a wrongly re-loaded topic closes too
            try:
                self.comeback.append(await self.service.topic(TOPIC))
            except NotOwner as exc:
                self.comeback.append(exc)


def test_a_client_back_during_a_bundle_unload_is_refused(
        zk_store: Callable[..., MetadataStore]) -> None:
    store = zk_store()
    resources = PulsarResources(store)
    resources.ensure_cluster("a", ClusterData(ME.web_url, ME.broker_url))
    resources.create_tenant("moving", TenantInfo(allowed_clusters=("a",)))
    resources.create_namespace(TOPIC.namespace_name, NamespacePolicies(("a",)))
    registry = BrokerRegistry(store, ME, stale_wait=5)
    registry.register()
    ledgers: list[_Ledger] = []

    async def open_ledger(topic: TopicName) -> ManagedLedger:
        ledgers.append(_Ledger())
        return ledgers[-1]  # type: ignore[return-value]

    async def main() -> None:
        namespaces = NamespaceService(resources, OwnershipCache(store, ME, stale_wait=5),
                                      registry, open_ledger)
        replication = _ReplicatorComesBack()
        service = replication.service = BrokerService(
            namespaces, "a", SchemaRegistry(MemorySchemas()), replication)
        assert (await namespaces.lookup(TOPIC)).is_self
        await service.topic(TOPIC)
        bundle = await namespaces.bundle_of(TOPIC)

        async with asyncio.timeout(10):
            await namespaces.unload_bundle(bundle)

        assert len(replication.comeback) == 1
        assert isinstance(replication.comeback[0], NotOwner), \
            "the topic was loaded again into the bundle being unloaded"
        assert namespaces.loaded_topics() == {}
        assert [ledger.closed for ledger in ledgers] == [True]
        assert await asyncio.to_thread(namespaces.ownership.owner, bundle) is None

    asyncio.run(main())


class _Cursor:
    def rewind(self) -> None:
        pass


def test_a_replicator_stops_although_its_cancel_came_with_an_answer() -> None:
    """Python 3.11's `asyncio.wait_for` drops a cancel that arrives in the same loop turn
    as the answer it waits for; the replicator must stop all the same."""

    async def main() -> None:
        asked = asyncio.Event()
        answer: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        async def remote_url() -> str:
            asked.set()
            return await asyncio.wait_for(answer, 5)

        async def no_marker(*_: object) -> None:
            pass

        links = ReplicatorLinks(remote_url=remote_url, remote_marker=no_marker,
                                data_seen=lambda _p: None, message_ttl_s=lambda: None)
        replicator = Replicator(str(TOPIC), _Cursor(), "a", "b",  # type: ignore[arg-type]
                                links, GeoReplicationConfig())
        replicator.start()
        await asyncio.wait_for(asked.wait(), 5)
        answer.set_result(NOWHERE)  # the answer and the stop in one loop turn
        stopping = asyncio.ensure_future(replicator.stop())
        done, _ = await asyncio.wait({stopping}, timeout=5)
        stopping.cancel()  # ends the loop if it ran on, so the test ends either way
        assert done, "the replicator ran on after stop(): a topic unload would never end"

    asyncio.run(main())
