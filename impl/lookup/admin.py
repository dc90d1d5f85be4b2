"""The lookup service's HTTP API: register clusters, assign tenants, read an assignment.

| method and path | body | does |
| --- | --- | --- |
| `PUT /lookup/v2/clusters/{name}` | `{"brokerServiceUrl": "pulsar://..."}` | register or move a cluster |
| `PUT /lookup/v2/tenants/{tenant}` | `{"cluster": name}` | send the tenant's lookups to that cluster (412: unknown cluster) |
| `GET /lookup/v2/tenants/{tenant}` | | `{"cluster", "brokerServiceUrl"}` (404: unknown tenant) |
| `GET /lookup/v2/health` | | `ok` |
"""  # noqa: E501 (a Markdown table)

from __future__ import annotations

import asyncio

from aiohttp import web

from impl.admin.bodies import json_object
from impl.admin.errors import error_response, errors_middleware
from impl.lookup.directory import TenantDirectory, UnknownCluster, UnknownTenant

DIRECTORY: web.AppKey[TenantDirectory] = web.AppKey("starquake.lookup.directory",
                                                    TenantDirectory)
routes = web.RouteTableDef()


def _text_field(body: dict[str, object], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value:
        raise ValueError(f"request body needs a non-empty string {name!r}")
    return value


@routes.put("/lookup/v2/clusters/{name}")
async def put_cluster(request: web.Request) -> web.Response:
    url = _text_field(await json_object(request), "brokerServiceUrl")
    await asyncio.to_thread(request.app[DIRECTORY].set_cluster, request.match_info["name"], url)
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


@routes.get("/lookup/v2/health")
async def health(_request: web.Request) -> web.Response:
    return web.Response(text="ok")


def build_lookup_app(directory: TenantDirectory) -> web.Application:
    app = web.Application(middlewares=[errors_middleware])
    app[DIRECTORY] = directory
    app.add_routes(routes)
    return app
