"""Routes for a resource that is a flat set of named JSON documents (clusters, tenants):
list, get, create (PUT), update (POST), delete, each one call into `PulsarResources`,
which holds the rules (a tenant needs known clusters, one with namespaces stays)."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from aiohttp import web

from impl.admin.bodies import json_object
from impl.admin.context import context


class JsonDocument(Protocol):
    def to_json(self) -> dict[str, Any]: ...


class JsonDocumentType(Protocol):
    def from_json(self, value: dict[str, Any]) -> JsonDocument: ...


def named_routes(plural: str, singular: str, document: JsonDocumentType) -> web.RouteTableDef:
    """`/admin/v2/{plural}` and `/admin/v2/{plural}/{name}`, served by the `PulsarResources`
    methods `{plural}`, `{singular}`, `create_{singular}`, `update_{singular}` and
    `delete_{singular}`."""
    routes = web.RouteTableDef()
    one = f"/admin/v2/{plural}/{{name}}"

    def call(request: web.Request, method: str, *args: Any) -> Any:
        return asyncio.to_thread(getattr(context(request).resources, method), *args)

    @routes.get(f"/admin/v2/{plural}")
    async def list_all(request: web.Request) -> web.Response:
        return web.json_response(await call(request, plural))

    @routes.get(one)
    async def get(request: web.Request) -> web.Response:
        found = await call(request, singular, request.match_info["name"])
        return web.json_response(found.to_json())

    async def write(request: web.Request, verb: str) -> web.Response:
        value = document.from_json(await json_object(request))
        await call(request, f"{verb}_{singular}", request.match_info["name"], value)
        return web.Response(status=204)

    @routes.put(one)
    async def create(request: web.Request) -> web.Response:
        return await write(request, "create")

    @routes.post(one)
    async def update(request: web.Request) -> web.Response:
        return await write(request, "update")

    @routes.delete(one)
    async def delete(request: web.Request) -> web.Response:
        await call(request, f"delete_{singular}", request.match_info["name"])
        return web.Response(status=204)

    return routes
