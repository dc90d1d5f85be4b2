"""`non-persistent://` topics on Pulsar's `/admin/v2/non-persistent/...` paths: their stats
(a non-persistent topic exists only while a broker serves it, so one not loaded on its
owner answers 404, as in Pulsar). Partitioned non-persistent topics are refused."""

from __future__ import annotations

from aiohttp import web

from impl.admin.context import context
from impl.admin.errors import error_response
from impl.admin.redirect import require_owner
from impl.admin.topic_stats import topic_stats
from impl.broker.no_storage import NoLedger
from impl.naming.topic_name import NON_PERSISTENT, TopicName
from impl.resources import ResourceNotFound

routes = web.RouteTableDef()

TOPIC = "/admin/v2/non-persistent/{tenant}/{namespace}/{topic}"


@routes.get(TOPIC + "/stats")
async def get_stats(request: web.Request) -> web.Response:
    info = request.match_info
    topic = TopicName(NON_PERSISTENT, info["tenant"], info["namespace"], info["topic"])
    await require_owner(request, topic)
    clients = context(request).client_stats(topic)
    if not clients:
        raise ResourceNotFound("topic", str(topic))
    return web.json_response(topic_stats(NoLedger(str(topic)), clients))


@routes.put(TOPIC + "/partitions")
async def refuse_partitioned(request: web.Request) -> web.Response:
    return error_response(501, "partitioned non-persistent topics are not supported by "
                               "this broker")
