"""A persistent topic's subscriptions on Pulsar's `/admin/v2/persistent/...` paths: list,
create, delete, peek, skip, clear, reset, expire; and the topic's last message id.

They run on the topic's owner (others answer 307 to it) and act through the front end's
`Topic` and `Subscription` (impl/broker/backlog.py), the objects consumers are served by.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from impl.admin.bodies import json_body
from impl.admin.context import context, served_topic
from impl.admin.message_ids import EARLIEST, message_id_json, requested_position
from impl.admin.peek import entry_response
from impl.admin.redirect import require_owner
from impl.admin.topic_routes import TOPIC, existing_topic, topic_of
from impl.broker import backlog
from impl.broker.subscription import Subscription
from impl.broker.topic import Topic

routes = web.RouteTableDef()

SUBSCRIPTION = TOPIC + "/subscription/{subscription}"
NO_CONTENT = 204


async def _topic(request: web.Request) -> Topic:
    return await served_topic(request, await existing_topic(request))


async def _subscription(request: web.Request) -> tuple[Topic, Subscription]:
    topic = await _topic(request)
    return topic, await topic.existing_subscription(request.match_info["subscription"])


def _number(request: web.Request, key: str) -> int:
    return int(request.match_info[key])


@routes.get(TOPIC + "/subscriptions")
async def list_subscriptions(request: web.Request) -> web.Response:
    return web.json_response((await _topic(request)).subscription_names())


@routes.get(TOPIC + "/lastMessageId")
async def last_message_id(request: web.Request) -> web.Response:
    """`-1:-1` on a topic with nothing written; a batch's last message has its index."""
    position, batch_index = await (await _topic(request)).last_message()
    return web.json_response(message_id_json(position, batch_index))


@routes.put(SUBSCRIPTION)
async def create_subscription(request: web.Request) -> web.Response:
    """Body: an optional message id to start at (the earliest when absent, as in Pulsar).
    The topic is created if it does not exist, as Pulsar's auto-creation does."""
    name = topic_of(request)
    await asyncio.to_thread(context(request).resources.policies, name.namespace_name)
    body = await json_body(request)
    start = requested_position(body) if body else EARLIEST
    await require_owner(request, name)
    topic = await served_topic(request, name)
    await topic.create_subscription(request.match_info["subscription"], start)
    return web.Response(status=NO_CONTENT)


@routes.delete(SUBSCRIPTION)
async def delete_subscription(request: web.Request) -> web.Response:
    """412 while consumers are connected, unless `?force=true` disconnects them."""
    topic = await _topic(request)
    force = request.query.get("force", "false").lower() == "true"
    await topic.delete_subscription(request.match_info["subscription"], force)
    return web.Response(status=NO_CONTENT)


@routes.get(SUBSCRIPTION + r"/position/{n:\d+}")
async def peek_message(request: web.Request) -> web.Response:
    topic, subscription = await _subscription(request)
    entry = await backlog.peek(topic, subscription, _number(request, "n"))
    if entry is None:
        raise web.HTTPNotFound(reason="Message not found")
    return entry_response(entry)


@routes.post(SUBSCRIPTION + r"/skip/{n:\d+}")
async def skip_messages(request: web.Request) -> web.Response:
    _, subscription = await _subscription(request)
    await backlog.skip(subscription, _number(request, "n"))
    return web.Response(status=NO_CONTENT)


@routes.post(SUBSCRIPTION + "/skip_all")
async def skip_all_messages(request: web.Request) -> web.Response:
    topic, subscription = await _subscription(request)
    await backlog.skip_all(topic, subscription)
    return web.Response(status=NO_CONTENT)


@routes.post(SUBSCRIPTION + r"/resetcursor/{timestamp:\d+}")
async def reset_cursor_to_time(request: web.Request) -> web.Response:
    topic, subscription = await _subscription(request)
    await backlog.reset_to_time(topic, subscription, _number(request, "timestamp"))
    return web.Response(status=NO_CONTENT)


@routes.post(SUBSCRIPTION + "/resetcursor")
async def reset_cursor_to_message(request: web.Request) -> web.Response:
    """Body: the message id to deliver from (`isExcluded`: from the one after it)."""
    position = requested_position(await json_body(request))
    _, subscription = await _subscription(request)
    await subscription.reset(position)
    return web.Response(status=NO_CONTENT)


@routes.post(SUBSCRIPTION + r"/expireMessages/{seconds:\d+}")
async def expire_messages(request: web.Request) -> web.Response:
    topic, subscription = await _subscription(request)
    await backlog.expire(topic, subscription, _number(request, "seconds"))
    return web.Response(status=NO_CONTENT)


@routes.post(TOPIC + r"/all_subscription/expireMessages/{seconds:\d+}")
async def expire_messages_everywhere(request: web.Request) -> web.Response:
    topic = await _topic(request)
    for name in topic.subscription_names():
        await backlog.expire(topic, await topic.existing_subscription(name),
                             _number(request, "seconds"))
    return web.Response(status=NO_CONTENT)
