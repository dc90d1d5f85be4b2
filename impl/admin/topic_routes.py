"""`/admin/v2/persistent/{tenant}/{namespace}[/{topic}]`: list, create, delete (with the
topic's own policies), terminate, unload, stats, internal stats; and Pulsar's HTTP lookup
`/lookup/v2/topic/...`.

Every per-topic operation runs on the topic's owner: other brokers answer 307 to it.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from impl.admin.context import context
from impl.admin.redirect import authoritative, redirect_to, require_owner
from impl.admin.topic_stats import internal_stats, topic_stats
from impl.naming.topic_name import NamespaceName, TopicName
from impl.resources import ResourceExists, ResourceInUse, ResourceNotFound
from impl.topic_policies import delete_topic_policies

routes = web.RouteTableDef()

TOPIC = "/admin/v2/persistent/{tenant}/{namespace}/{topic}"


def topic_of(request: web.Request) -> TopicName:
    info = request.match_info
    return TopicName("persistent", info["tenant"], info["namespace"], info["topic"])


async def existing_topic(request: web.Request) -> TopicName:
    """The topic named in the path, served here; 404 if it does not exist."""
    topic = topic_of(request)
    if not await asyncio.to_thread(context(request).resources.topic_exists, topic):
        raise ResourceNotFound("topic", str(topic))
    await require_owner(request, topic)
    return topic


@routes.get("/admin/v2/persistent/{tenant}/{namespace}")
async def list_topics(request: web.Request) -> web.Response:
    ctx = context(request)
    namespace = NamespaceName(request.match_info["tenant"], request.match_info["namespace"])
    await asyncio.to_thread(ctx.resources.policies, namespace)  # 404 for a missing namespace
    return web.json_response(await asyncio.to_thread(ctx.resources.topics, namespace))


@routes.put(TOPIC)
async def create_topic(request: web.Request) -> web.Response:
    ctx = context(request)
    topic = topic_of(request)
    await asyncio.to_thread(ctx.resources.policies, topic.namespace_name)
    if await asyncio.to_thread(ctx.resources.topic_exists, topic):
        raise ResourceExists("topic", str(topic))
    if await ctx.namespaces.partitions(topic):
        raise ResourceExists("partitioned topic", str(topic))  # as Pulsar answers, 409
    await require_owner(request, topic)
    await ctx.namespaces.load_topic(topic)
    return web.Response(status=204)


@routes.delete(TOPIC)
async def delete_topic(request: web.Request) -> web.Response:
    ctx = context(request)
    topic = await existing_topic(request)
    clients = ctx.client_stats(topic)
    connected = clients.get("publishers") or any(
        s.get("consumers") for s in clients.get("subscriptions", {}).values())
    if connected and request.query.get("force", "false").lower() != "true":
        raise ResourceInUse(f"topic {topic} has active producers or consumers "
                            "(delete with force=true)")
    await ctx.namespaces.delete_topic(topic)
    await asyncio.to_thread(delete_topic_policies, ctx.store, topic)
    return web.Response(status=204)


@routes.post(TOPIC + "/terminate")
async def terminate_topic(request: web.Request) -> web.Response:
    ctx = context(request)
    topic = await existing_topic(request)
    ledger = await ctx.namespaces.load_topic(topic)
    last = await ledger.terminate()
    return web.json_response({
        "ledgerId": last.ledger_id if last else -1,
        "entryId": last.entry_id if last else -1,
        "partitionIndex": -1,
    })


@routes.put(TOPIC + "/unload")
async def unload_topic(request: web.Request) -> web.Response:
    topic = await existing_topic(request)
    await context(request).namespaces.unload_topic(topic)
    return web.Response(status=204)


@routes.get(TOPIC + "/stats")
async def get_stats(request: web.Request) -> web.Response:
    ctx = context(request)
    topic = await existing_topic(request)
    ledger = await ctx.namespaces.load_topic(topic)
    return web.json_response(topic_stats(ledger, ctx.client_stats(topic)))


@routes.get(TOPIC + "/internalStats")
async def get_internal_stats(request: web.Request) -> web.Response:
    ctx = context(request)
    topic = await existing_topic(request)
    return web.json_response(internal_stats(await ctx.namespaces.load_topic(topic)))


@routes.get("/lookup/v2/topic/{domain}/{tenant}/{namespace}/{topic}")
async def lookup_topic(request: web.Request) -> web.Response:
    """Pulsar's HTTP lookup: the owner's URLs (`LookupData`). A free bundle is assigned
    as a binary-protocol lookup would assign it; a candidate elsewhere answers for itself
    after a redirect."""
    ctx = context(request)
    info = request.match_info
    topic = TopicName(info["domain"], info["tenant"], info["namespace"], info["topic"])
    result = await ctx.namespaces.lookup(topic, authoritative(request))
    if not result.is_self and result.authoritative:
        raise redirect_to(result.owner, request)  # the candidate claims it, then answers
    return web.json_response({
        "brokerUrl": result.owner.broker_url,
        "nativeUrl": result.owner.broker_url,
        "httpUrl": result.owner.web_url,
        "brokerUrlTls": "",
        "httpUrlTls": "",
    })
