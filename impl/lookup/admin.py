"""The lookup service's HTTP API: register clusters, assign tenants, read an assignment.

| method and path | body | does |
| --- | --- | --- |
| `PUT /lookup/v2/clusters/{name}` | `{"brokerServiceUrl": "pulsar://...", "serviceUrl": "http://..."}` | register or move a cluster (`serviceUrl`, its admin API, is needed only to migrate) |
| `PUT /lookup/v2/tenants/{tenant}` | `{"cluster": name}` | send the tenant's lookups to that cluster (412: unknown cluster) |
| `GET /lookup/v2/tenants/{tenant}` | | `{"cluster", "brokerServiceUrl"}` (404: unknown tenant) |
| `POST /lookup/v2/tenants/{tenant}/migration` | `{"cluster": name, "timeoutSeconds": 120}` | 202: move the tenant there by the five steps (`impl/lookup/migration.py`); 404 unknown tenant or cluster, 409 already there or moving, 412 a cluster without `serviceUrl` |
| `GET /lookup/v2/tenants/{tenant}/migration` | | the latest migration: `{"tenant", "from", "to", "state", "steps": [{"step", "state", "message"}]}` (404: none) |
| `GET /lookup/v2/health` | | `ok` |

With a guard that authenticates (`--token-secret-key`), every path but the health check
needs `Authorization: Bearer <token>` (401 without a valid one); the changes (PUT, POST) need a
superuser (403 for another role), as the clusters of a broker's admin API do; reads, like
reading a broker's clusters, any authenticated role.
"""  # noqa: E501 (a Markdown table)

from __future__ import annotations

import asyncio

from aiohttp import web

from impl.admin.access_control import Needs, access_middleware, read_by_any_role
from impl.admin.bodies import MAX_BODY_BYTES, json_object
from impl.admin.errors import error_response, errors_middleware
from impl.lookup.directory import TenantDirectory, UnknownCluster, UnknownTenant
from impl.lookup.migration import MigrationRefused, Migrations
from impl.security.guard import OPEN_GUARD, Guard

DIRECTORY: web.AppKey[TenantDirectory] = web.AppKey("starquake.lookup.directory",
                                                    TenantDirectory)
MIGRATIONS: web.AppKey[Migrations] = web.AppKey("starquake.lookup.migrations", Migrations)
DEFAULT_STEP_TIMEOUT_S = 120.0
routes = web.RouteTableDef()
HEALTH_PATH = "/lookup/v2/health"


def _text_field(body: dict[str, object], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value:
        raise ValueError(f"request body needs a non-empty string {name!r}")
    return value


@routes.put("/lookup/v2/clusters/{name}")
async def put_cluster(request: web.Request) -> web.Response:
    body = await json_object(request)
    url = _text_field(body, "brokerServiceUrl")
    admin_url = _text_field(body, "serviceUrl") if "serviceUrl" in body else ""
    await asyncio.to_thread(request.app[DIRECTORY].set_cluster, request.match_info["name"],
                            url, admin_url)
    return web.Response(status=204)


@routes.put("/lookup/v2/tenants/{tenant}")
async def assign_tenant(request: web.Request) -> web.Response:
    cluster = _text_field(await json_object(request), "cluster")
    try:
        await asyncio.to_thread(request.app[DIRECTORY].assign, request.match_info["tenant"],
                                cluster)
    except UnknownCluster as exc:
        return error_response(412, str(exc))
    return web.Response(status=204)


@routes.get("/lookup/v2/tenants/{tenant}")
async def get_tenant(request: web.Request) -> web.Response:
    directory = request.app[DIRECTORY]
    tenant = request.match_info["tenant"]
    try:
        cluster = await asyncio.to_thread(directory.cluster_of, tenant)
        url = await asyncio.to_thread(directory.broker_service_url, cluster)
    except (UnknownTenant, UnknownCluster) as exc:
        return error_response(404, str(exc))
    return web.json_response({"cluster": cluster, "brokerServiceUrl": url})


@routes.post("/lookup/v2/tenants/{tenant}/migration")
async def start_migration(request: web.Request) -> web.Response:
    body = await json_object(request)
    target = _text_field(body, "cluster")
    timeout_s = body.get("timeoutSeconds", DEFAULT_STEP_TIMEOUT_S)
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or timeout_s <= 0:
        raise ValueError("timeoutSeconds must be a positive number")
    try:
        migration = await request.app[MIGRATIONS].start(request.match_info["tenant"], target,
                                                        float(timeout_s))
    except (UnknownTenant, UnknownCluster) as exc:
        return error_response(404, str(exc))
    except MigrationRefused as exc:
        return error_response(exc.status, str(exc))
    return web.json_response(migration.report(), status=202)


@routes.get("/lookup/v2/tenants/{tenant}/migration")
async def get_migration(request: web.Request) -> web.Response:
    tenant = request.match_info["tenant"]
    migration = request.app[MIGRATIONS].of(tenant)
    if migration is None:
        return error_response(404, f"no migration of tenant {tenant} in this lookup service")
    return web.json_response(migration.report())


@routes.get(HEALTH_PATH)
async def health(_request: web.Request) -> web.Response:
    return web.Response(text="ok")


def lookup_needs(method: str, _path: str) -> Needs:
    """What a request to the lookup service needs of its caller's role."""
    return read_by_any_role(method)


def build_lookup_app(directory: TenantDirectory, migrations: Migrations,
                     guard: Guard = OPEN_GUARD) -> web.Application:
    app = web.Application(middlewares=[
        errors_middleware, access_middleware(guard, lookup_needs, (HEALTH_PATH,))],
        client_max_size=MAX_BODY_BYTES)
    app[DIRECTORY] = directory
    app[MIGRATIONS] = migrations
    app.add_routes(routes)
    return app
