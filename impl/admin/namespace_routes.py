"""`/admin/v2/namespaces`: create, list, get policies, delete; replication clusters (for
geo-replication); bundles and bundle unload. Single policies (TTL, retention, backlog
quotas) are in namespace_policy_routes.py."""

from __future__ import annotations

import asyncio
import dataclasses

from aiohttp import web

from impl.admin.bodies import json_object, json_string_list
from impl.admin.context import context
from impl.admin.redirect import redirect_to
from impl.naming.bundles import BundleRange, NamespaceBundle
from impl.naming.topic_name import NamespaceName
from impl.resources import NamespacePolicies, ResourceNotFound

routes = web.RouteTableDef()


def namespace_of(request: web.Request) -> NamespaceName:
    return NamespaceName(request.match_info["tenant"], request.match_info["namespace"])


@routes.get("/admin/v2/namespaces/{tenant}")
async def list_namespaces(request: web.Request) -> web.Response:
    return web.json_response(await asyncio.to_thread(context(request).resources.namespaces,
                                                     request.match_info["tenant"]))


@routes.put("/admin/v2/namespaces/{tenant}/{namespace}")
async def create_namespace(request: web.Request) -> web.Response:
    ctx = context(request)
    policies = NamespacePolicies.from_json(await json_object(request),
                                           ctx.max_namespace_bundles)
    if not policies.replication_clusters:
        # As Pulsar does: a namespace created without replication lives in this cluster.
        policies = dataclasses.replace(policies, replication_clusters=(ctx.cluster,))
    await asyncio.to_thread(ctx.resources.create_namespace, namespace_of(request), policies)
    return web.Response(status=204)


@routes.get("/admin/v2/namespaces/{tenant}/{namespace}")
async def get_policies(request: web.Request) -> web.Response:
    policies = await asyncio.to_thread(context(request).resources.policies, namespace_of(request))
    return web.json_response(policies.to_json())


@routes.delete("/admin/v2/namespaces/{tenant}/{namespace}")
async def delete_namespace(request: web.Request) -> web.Response:
    await asyncio.to_thread(context(request).resources.delete_namespace, namespace_of(request))
    return web.Response(status=204)


@routes.get("/admin/v2/namespaces/{tenant}/{namespace}/replication")
async def get_replication(request: web.Request) -> web.Response:
    policies = await asyncio.to_thread(context(request).resources.policies, namespace_of(request))
    return web.json_response(list(policies.replication_clusters))


@routes.post("/admin/v2/namespaces/{tenant}/{namespace}/replication")
async def set_replication(request: web.Request) -> web.Response:
    clusters = await json_string_list(request)
    await asyncio.to_thread(context(request).resources.set_replication_clusters,
                            namespace_of(request), clusters)
    return web.Response(status=204)


@routes.get("/admin/v2/namespaces/{tenant}/{namespace}/bundles")
async def get_bundles(request: web.Request) -> web.Response:
    policies = await asyncio.to_thread(context(request).resources.policies, namespace_of(request))
    return web.json_response(policies.to_json()["bundles"])


@routes.get("/admin/v2/namespaces/{tenant}/{namespace}/topics")
async def list_namespace_topics(request: web.Request) -> web.Response:
    return web.json_response(await asyncio.to_thread(context(request).resources.topics,
                                                     namespace_of(request)))


@routes.put("/admin/v2/namespaces/{tenant}/{namespace}/{bundle}/unload")
async def unload_bundle(request: web.Request) -> web.Response:
    ctx = context(request)
    namespace = namespace_of(request)
    wanted = BundleRange.parse(request.match_info["bundle"])
    bundles = await asyncio.to_thread(ctx.resources.bundles, namespace)
    bundle = NamespaceBundle(namespace, wanted)
    if bundle not in bundles.bundles:
        raise ResourceNotFound("bundle", str(bundle))
    owner = await asyncio.to_thread(ctx.namespaces.ownership.owner, bundle)
    if owner is None:
        return web.Response(status=204)  # nobody serves it: nothing to unload
    if owner != ctx.namespaces.me:
        raise redirect_to(owner, request)
    await ctx.namespaces.unload_bundle(bundle)
    return web.Response(status=204)
