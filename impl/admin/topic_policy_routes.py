"""A topic's own policies on Pulsar's paths, read (GET), set (POST) and removed (DELETE):
`deduplicationEnabled`. One set on the topic takes precedence over its namespace's.

The topic must exist (404 otherwise) and the request runs on its owner (others answer
307), as Pulsar's do. A GET of a policy the topic does not set answers 204; with
`?applied=true` it answers the setting in force instead: the topic's, else the
namespace's, else the broker's.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from impl.admin.bodies import json_boolean
from impl.admin.context import context
from impl.admin.topic_routes import TOPIC, existing_topic
from impl.broker.dedup_policy import applied_deduplication
from impl.topic_policies import read_topic_policies, set_topic_deduplication

routes = web.RouteTableDef()

NO_CONTENT = 204


@routes.get(TOPIC + "/deduplicationEnabled")
async def get_deduplication(request: web.Request) -> web.Response:
    ctx = context(request)
    topic = await existing_topic(request)
    if request.query.get("applied", "false").lower() == "true":
        return web.json_response(await asyncio.to_thread(
            applied_deduplication, ctx.resources, topic, ctx.broker_deduplication))
    own = await asyncio.to_thread(read_topic_policies, ctx.store, topic)
    if own.deduplication_enabled is None:
        return web.Response(status=NO_CONTENT)
    return web.json_response(own.deduplication_enabled)


@routes.post(TOPIC + "/deduplicationEnabled")
async def set_deduplication(request: web.Request) -> web.Response:
    """Body: `true` or `false`."""
    topic = await existing_topic(request)
    enabled = await json_boolean(request)
    await asyncio.to_thread(set_topic_deduplication, context(request).store, topic, enabled)
    return web.Response(status=NO_CONTENT)


@routes.delete(TOPIC + "/deduplicationEnabled")
async def remove_deduplication(request: web.Request) -> web.Response:
    topic = await existing_topic(request)
    await asyncio.to_thread(set_topic_deduplication, context(request).store, topic, None)
    return web.Response(status=NO_CONTENT)
