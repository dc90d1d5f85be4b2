"""The admin REST API's metadata endpoints, served by the real app over a real ZooKeeper
(topic endpoints need bookies and run in tests/cluster)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from impl.admin.app import build_admin_app
from impl.admin.context import CONTEXT, AdminContext
from impl.metadata.store import MetadataStore
from impl.naming.topic_name import TopicName
from impl.ownership.brokers import BrokerInfo, BrokerRegistry
from impl.ownership.namespace_service import NamespaceService
from impl.ownership.ownership_cache import OwnershipCache
from impl.resources import ClusterData, PulsarResources
from impl.security.config import SecurityConfig
from impl.security.guard import OPEN_GUARD, Guard

pytestmark = pytest.mark.zk

DEBUGGING = Guard(SecurityConfig(debug_endpoints=True))
ME = BrokerInfo("pulsar://127.0.0.1:1001", "http://127.0.0.1:2001")
OTHER = BrokerInfo("pulsar://127.0.0.1:1002", "http://127.0.0.1:2002")


async def _no_ledgers(topic: TopicName) -> Any:
    raise AssertionError(f"metadata endpoints must not open a ledger ({topic})")


@asynccontextmanager
async def admin(store: MetadataStore,
                guard: Callable[[PulsarResources], Guard] = lambda _resources: OPEN_GUARD
                ) -> AsyncIterator[TestClient]:
    """The admin app over `store`, asking the guard `guard(resources)` makes."""
    resources = PulsarResources(store)
    resources.ensure_cluster("a", ClusterData("http://127.0.0.1:2001", ME.broker_url))
    registry = BrokerRegistry(store, ME, stale_wait=5)
    registry.register()
    service = NamespaceService(resources, OwnershipCache(store, ME, stale_wait=5), registry,
                               _no_ledgers)
    ctx = AdminContext("a", store, resources, service, healthy=lambda: None)
    client = TestClient(TestServer(build_admin_app(ctx, guard(resources))))
    await client.start_server()
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
def run(zk_store: Callable[..., MetadataStore]) -> Iterator[Callable[..., Any]]:
    store = zk_store()

    def run_with_admin(scenario: Callable[[TestClient], Any]) -> Any:
        async def main() -> Any:
            # As the harness starts brokers: the nemesis's debug endpoint switched on.
            async with admin(store, lambda _resources: DEBUGGING) as client:
                return await scenario(client)
        return asyncio.run(main())

    yield run_with_admin


def test_tenants_and_namespaces_follow_pulsars_rules(run: Callable[..., Any]) -> None:
    async def scenario(client: TestClient) -> None:
        created = await client.put("/admin/v2/tenants/acme", json={"allowedClusters": ["a"]})
        assert created.status == 204
        again = await client.put("/admin/v2/tenants/acme", json={})
        assert again.status == 409 and "already exists" in (await again.json())["reason"]
        assert await (await client.get("/admin/v2/tenants")).json() == ["acme"]

        missing = await client.put("/admin/v2/namespaces/nobody/ns")
        assert missing.status == 404 and "tenant nobody" in (await missing.json())["reason"]
        assert (await client.put("/admin/v2/namespaces/acme/orders",
                                 json={"bundles": {"numBundles": 8}})).status == 204
        assert await (await client.get("/admin/v2/namespaces/acme")).json() == ["acme/orders"]
        policies = await (await client.get("/admin/v2/namespaces/acme/orders")).json()
        assert policies["replication_clusters"] == ["a"]
        assert policies["bundles"]["numBundles"] == 8
        assert policies["bundles"]["boundaries"][:2] == ["0x00000000", "0x20000000"]

        in_use = await client.delete("/admin/v2/tenants/acme")
        assert in_use.status == 409
        assert (await client.delete("/admin/v2/namespaces/acme/orders")).status == 204
        assert (await client.delete("/admin/v2/tenants/acme")).status == 204
        assert (await client.get("/admin/v2/tenants/acme")).status == 404

    run(scenario)


def test_replication_clusters_must_exist(run: Callable[..., Any]) -> None:
    async def scenario(client: TestClient) -> None:
        await client.put("/admin/v2/tenants/t", json={"allowedClusters": ["a"]})
        await client.put("/admin/v2/namespaces/t/geo")
        unknown = await client.post("/admin/v2/namespaces/t/geo/replication", json=["a", "b"])
        assert unknown.status == 412 and "b" in (await unknown.json())["reason"]
        assert (await client.put("/admin/v2/clusters/b",
                                 json={"serviceUrl": "http://b:8080"})).status == 204
        assert sorted(await (await client.get("/admin/v2/clusters")).json()) == ["a", "b"]
        assert (await client.post("/admin/v2/namespaces/t/geo/replication",
                                  json=["a", "b"])).status == 204
        replication = await client.get("/admin/v2/namespaces/t/geo/replication")
        assert await replication.json() == ["a", "b"]
        bad = await client.post("/admin/v2/namespaces/t/geo/replication", data="not json")
        assert bad.status == 400

    run(scenario)


def test_health_brokers_and_the_session_for_the_nemesis(
        run: Callable[..., Any], zk_store: Callable[..., MetadataStore]) -> None:
    BrokerRegistry(zk_store(), OTHER, stale_wait=5).register()

    async def scenario(client: TestClient) -> None:
        health = await client.get("/admin/v2/brokers/health")
        assert health.status == 200 and await health.text() == "ok"
        assert await (await client.get("/admin/v2/brokers/a")).json() == [
            "127.0.0.1:2001", "127.0.0.1:2002"]
        session = await (await client.get("/admin/v2/debug/zookeeper-session")).json()
        assert session["sessionId"] > 0 and len(bytes.fromhex(session["password"])) == 16

    run(scenario)


def test_a_topic_in_a_bundle_owned_elsewhere_is_redirected_to_its_owner(
        run: Callable[..., Any], zk_store: Callable[..., MetadataStore]) -> None:
    other_store = zk_store()
    other = OwnershipCache(other_store, OTHER, stale_wait=5)

    async def scenario(client: TestClient) -> None:
        topic = TopicName.parse("persistent://public/default/elsewhere")
        app_ctx = client.server.app[CONTEXT]
        app_ctx.resources.ensure_namespace(topic.namespace_name, "a")
        bundle = await app_ctx.namespaces.bundle_of(topic)
        other.try_acquire(bundle)
        response = await client.put("/admin/v2/persistent/public/default/elsewhere",
                                    allow_redirects=False)
        assert response.status == 307
        assert response.headers["Location"] == (
            "http://127.0.0.1:2002/admin/v2/persistent/public/default/elsewhere"
            "?authoritative=true")
        answer = await client.get("/lookup/v2/topic/persistent/public/default/elsewhere")
        lookup = await answer.json()
        assert lookup["brokerUrl"] == OTHER.broker_url and lookup["httpUrl"] == OTHER.web_url

    run(scenario)
