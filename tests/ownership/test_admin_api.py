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


REFUSED_WRITES = [
    ("put", "/admin/v2/tenants/a%2Fb", {}, 412, "invalid tenant name 'a/b'"),
    ("put", "/admin/v2/tenants/nul%00", {}, 412, "invalid tenant name"),
    ("put", "/admin/v2/tenants/t2", {"allowedClusters": ["a/x"]}, 412, "invalid cluster name"),
    ("put", "/admin/v2/clusters/c%2Fd", {"serviceUrl": "http://c:8080"}, 412,
     "invalid cluster name"),
    ("put", "/admin/v2/clusters/c", {"serviceUrl": 8080}, 400, "serviceUrl must be a string"),
    ("put", "/admin/v2/clusters/c", {"brokerServiceUrl": "http://c:6650"}, 400,
     "brokerServiceUrl must be a pulsar or pulsar+ssl URL"),
    ("put", "/admin/v2/namespaces/t/bad%2Fname", None, 412, "invalid namespace name"),
    ("put", "/admin/v2/namespaces/t/b1", {"bundles": {"boundaries": ["0x10", "0xffffffff"]}},
     412, "the first boundary must be 0x00000000"),
    ("put", "/admin/v2/namespaces/t/b2", {"deduplicationEnabled": "yes"}, 400,
     "deduplicationEnabled must be true or false"),
    ("put", "/admin/v2/namespaces/t/b3", {"message_ttl_in_seconds": 2**80}, 400,
     "message_ttl_in_seconds must be a whole number from 0 to 2147483647"),
    ("post", "/admin/v2/namespaces/t/ns/messageTTL", 2**80, 400,
     "the message TTL in seconds must be a whole number"),
    ("post", "/admin/v2/namespaces/t/ns/messageTTL", "60", 400, "must be a whole number"),
    ("post", "/admin/v2/namespaces/t/ns/retention",
     {"retentionTimeInMinutes": 2**40, "retentionSizeInMB": 1}, 400,
     "retentionTimeInMinutes must be a whole number from -1 to 2147483647"),
    ("post", "/admin/v2/namespaces/t/ns/backlogQuota", {"limitSize": 2**70}, 400,
     "limitSize must be a whole number from -1 to 9223372036854775807"),
    ("get", "/lookup/v2/topic/unknown/t/ns/x", None, 412, "domain must be one of"),
]


def test_values_and_names_pulsar_would_refuse_are_refused_and_nothing_is_stored(
        run: Callable[..., Any]) -> None:
    """Each was once stored as sent (a TTL of 2^80 seconds, a service URL that is a
    number, a tenant `a/b` filed as a namespace of tenant `a`) or answered 200."""
    async def scenario(client: TestClient) -> None:
        await client.put("/admin/v2/tenants/t", json={"allowedClusters": ["a"]})
        await client.put("/admin/v2/namespaces/t/ns")
        before = [await (await client.get(path)).json() for path in (
            "/admin/v2/tenants", "/admin/v2/clusters", "/admin/v2/namespaces/t",
            "/admin/v2/namespaces/t/ns")]
        for method, path, body, status, reason in REFUSED_WRITES:
            answer = await getattr(client, method)(path, json=body)
            assert answer.status == status, (path, body, await answer.text())
            assert reason in (await answer.json())["reason"], (path, body)
        after = [await (await client.get(path)).json() for path in (
            "/admin/v2/tenants", "/admin/v2/clusters", "/admin/v2/namespaces/t",
            "/admin/v2/namespaces/t/ns")]
        assert after == before
        assert (await client.get("/admin/v2/tenants/a")).status == 404

    run(scenario)
