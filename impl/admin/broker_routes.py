"""Broker-level endpoints: health check, active brokers, owned bundles, and the debug
endpoint that tells the nemesis this broker's ZooKeeper session."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

from aiohttp import web

from impl.admin.context import context
from impl.admin.errors import error_response

routes = web.RouteTableDef()


@routes.get("/admin/v2/brokers/health")
async def health(request: web.Request) -> web.Response:
    """200 `ok` while the broker can serve (connected to ZooKeeper, session not lost);
    503 with the reason otherwise."""
    problem = context(request).healthy()
    if problem is not None:
        return error_response(503, problem)
    return web.Response(text="ok")


@routes.get("/admin/v2/brokers/{cluster}")
async def active_brokers(request: web.Request) -> web.Response:
    """The live brokers' web service addresses (`host:port`), as Pulsar lists them."""
    ctx = context(request)
    if request.match_info["cluster"] != ctx.cluster:
        return error_response(404, f"cluster {request.match_info['cluster']} is not this "
                                   f"broker's cluster ({ctx.cluster})")
    brokers = await asyncio.to_thread(ctx.namespaces.registry.live_brokers)
    return web.json_response(sorted(urlsplit(b.web_url).netloc for b in brokers))


@routes.get("/admin/v2/brokers/{cluster}/{broker}/ownedNamespaces")
async def owned_bundles(request: web.Request) -> web.Response:
    """The bundles this broker owns. Asked of another broker, redirected there only when
    it is a live broker of this cluster: the redirect's host comes from the registry, never
    from the request, so the route cannot send a client anywhere it is told."""
    ctx = context(request)
    wanted = request.match_info["broker"]
    if wanted != urlsplit(ctx.namespaces.me.web_url).netloc:
        brokers = await asyncio.to_thread(ctx.namespaces.registry.live_brokers)
        found = next((b for b in brokers if urlsplit(b.web_url).netloc == wanted), None)
        if found is None:
            return error_response(404, f"{wanted} is not a live broker of cluster "
                                       f"{ctx.cluster}")
        raise web.HTTPTemporaryRedirect(location=f"{found.web_url}{request.rel_url}")
    owned = ctx.namespaces.ownership.owned_bundles()
    return web.json_response({str(b): {"broker_assignment": "shared", "is_controlled": False,
                                       "is_active": s.value == "active"}
                              for b, s in sorted(owned.items())})


@routes.get("/admin/v2/debug/zookeeper-session")
async def zookeeper_session(request: web.Request) -> web.Response:
    """Not Pulsar's: the session id and password a nemesis needs to expire our session
    (nemesis/session_expiry.py)."""
    store = context(request).store
    session_id, password = store.session_id, store.session_password
    if session_id is None or password is None:
        return error_response(503, "no ZooKeeper session at the moment")
    return web.json_response({"sessionId": session_id, "sessionIdHex": f"0x{session_id:x}",
                              "password": password.hex(), "zookeeperServers": store.hosts})
