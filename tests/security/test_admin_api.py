"""The admin API with authentication and authorization on: 401 without credentials, 403
without the role a path needs, the namespace permissions endpoints, and the debug endpoint
switched off unless asked for."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from impl.admin.access_control import SUPERUSER as NEEDS_SUPERUSER
from impl.admin.access_control import Needs, needs
from impl.metadata.store import MetadataStore
from impl.naming.topic_name import NamespaceName
from impl.security.authorization import CONSUME, PRODUCE
from impl.security.config import SecurityConfig
from impl.security.guard import Guard
from tests.ownership.test_admin_api import admin
from tests.security.conftest import SUPERUSER, token

pytestmark = pytest.mark.zk

Scenario = Callable[[TestClient], Awaitable[None]]


def bearer(role: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token(role)}"}


@pytest.fixture
def run_guarded(zk_store: Callable[..., MetadataStore], secret_key_file: Path
                ) -> Callable[..., None]:
    store = zk_store()

    def run(scenario: Scenario, debug_endpoints: bool = False) -> None:
        config = SecurityConfig(authentication_enabled=True, authorization_enabled=True,
                                token_secret_key=str(secret_key_file),
                                superuser_roles=frozenset({SUPERUSER}),
                                debug_endpoints=debug_endpoints)

        async def main() -> None:
            async with admin(store, lambda resources: Guard(config, resources)) as client:
                await scenario(client)
        asyncio.run(main())
    return run


def test_no_credentials_get_401_and_cannot_create_a_tenant(run_guarded: Any) -> None:
    async def scenario(client: TestClient) -> None:
        refused = await client.put("/admin/v2/tenants/intruder", json={})
        assert refused.status == 401 and "no credentials" in (await refused.json())["reason"]
        forged = await client.put("/admin/v2/tenants/intruder", json={},
                                  headers={"Authorization": "Bearer not.a.token"})
        assert forged.status == 401
        assert (await client.get("/admin/v2/brokers/health")).status == 200
    run_guarded(scenario)


def test_only_a_superuser_creates_tenants(run_guarded: Any) -> None:
    async def scenario(client: TestClient) -> None:
        refused = await client.put("/admin/v2/tenants/acme", json={}, headers=bearer("bob"))
        assert refused.status == 403
        created = await client.put("/admin/v2/tenants/acme", headers=bearer(SUPERUSER),
                                   json={"adminRoles": ["acme-admin"], "allowedClusters": ["a"]})
        assert created.status == 204
    run_guarded(scenario)


def test_tenant_admins_grant_and_revoke_permissions_in_their_tenant_only(
        run_guarded: Any) -> None:
    async def scenario(client: TestClient) -> None:
        for tenant in ("acme", "other"):
            assert (await client.put(f"/admin/v2/tenants/{tenant}", headers=bearer(SUPERUSER),
                                     json={"adminRoles": [f"{tenant}-admin"],
                                           "allowedClusters": ["a"]})).status == 204
            assert (await client.put(f"/admin/v2/namespaces/{tenant}/ns",
                                     headers=bearer(SUPERUSER))).status == 204
        path = "/admin/v2/namespaces/acme/ns/permissions"
        granted = await client.post(f"{path}/app", json=["produce", "consume"],
                                    headers=bearer("acme-admin"))
        assert granted.status == 204
        listed = await client.get(path, headers=bearer("acme-admin"))
        assert await listed.json() == {"app": ["consume", "produce"]}
        unknown = await client.post(f"{path}/app", json=["fly"], headers=bearer("acme-admin"))
        assert unknown.status == 400
        elsewhere = await client.post("/admin/v2/namespaces/other/ns/permissions/app",
                                      json=["produce"], headers=bearer("acme-admin"))
        assert elsewhere.status == 403
        assert (await client.delete(f"{path}/app", headers=bearer("acme-admin"))).status == 204
        assert await (await client.get(path, headers=bearer(SUPERUSER))).json() == {}
    run_guarded(scenario)


def test_peeking_messages_needs_consume_permission(run_guarded: Any) -> None:
    async def scenario(client: TestClient) -> None:
        peek = "/admin/v2/persistent/public/default/t/subscription/s/position/1"
        assert (await client.get(peek, headers=bearer("producer-only"))).status == 403
        terminate = "/admin/v2/persistent/public/default/t/terminate"
        assert (await client.post(terminate, headers=bearer("producer-only"))).status == 403
    run_guarded(scenario)


def test_the_debug_endpoint_is_off_unless_switched_on_then_for_superusers(
        run_guarded: Any) -> None:
    path = "/admin/v2/debug/zookeeper-session"

    async def switched_off(client: TestClient) -> None:
        assert (await client.get(path, headers=bearer(SUPERUSER))).status == 404

    async def switched_on(client: TestClient) -> None:
        assert (await client.get(path)).status == 401
        assert (await client.get(path, headers=bearer("bob"))).status == 403
        session = await client.get(path, headers=bearer(SUPERUSER))
        assert session.status == 200 and "password" in await session.json()
    run_guarded(switched_off)
    run_guarded(switched_on, debug_endpoints=True)


ACME = NamespaceName("acme", "ns")


@pytest.mark.parametrize(("method", "path", "required"), [
    ("GET", "/admin/v2/clusters", Needs()),
    ("PUT", "/admin/v2/clusters/b", NEEDS_SUPERUSER),
    ("GET", "/admin/v2/tenants", NEEDS_SUPERUSER),
    ("GET", "/admin/v2/tenants/acme", Needs(tenant="acme")),
    ("DELETE", "/admin/v2/namespaces/acme/ns", Needs(tenant="acme")),
    ("GET", "/admin/v2/persistent/acme/ns/t/stats",
     Needs(namespace=ACME, actions=frozenset({PRODUCE, CONSUME}))),
    ("POST", "/admin/v2/persistent/acme/ns/t/subscription/s/skip_all",
     Needs(namespace=ACME, actions=frozenset({CONSUME}))),
    ("DELETE", "/admin/v2/persistent/acme/ns/t", Needs(tenant="acme")),
    ("GET", "/lookup/v2/topic/persistent/acme/ns/t",
     Needs(namespace=ACME, actions=frozenset({PRODUCE, CONSUME}))),
    ("GET", "/admin/v2/brokers/a", NEEDS_SUPERUSER),
])
def test_each_admin_path_needs_pulsars_role(method: str, path: str, required: Needs) -> None:
    assert needs(method, path) == required
