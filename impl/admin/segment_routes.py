"""`/admin/v2/segments/{tenant}/{namespace}/{topic}/{descriptor}`: PIP-468's Segments admin
API, served by the broker that owns the segment topic's bundle (others answer 307 to it).

| method | path | does |
| --- | --- | --- |
| PUT | `.../{descriptor}` | create: `{"subscriptions": [...], "initialPosition": "Earliest"}` |
| POST | `.../{descriptor}/terminate` | terminate (seal); the last position |
| DELETE | `.../{descriptor}` | delete the topic, its cursors and data |
| GET | `.../{descriptor}` | starquake's: terminated, cursors, drained per subscription, clients |
| DELETE | `.../{descriptor}/subscriptions/{subscription}` | starquake's: delete one cursor |
"""

from __future__ import annotations

import re

from aiohttp import web

from impl.admin.bodies import json_body
from impl.admin.context import context
from impl.admin.redirect import require_owner
from impl.naming.topic_name import TopicName
from impl.scalable.segment_storage import SegmentStorage
from impl.storage.api import InitialPosition
from wire.topic_names import SEGMENTS_ADMIN_API

routes = web.RouteTableDef()

SEGMENT = SEGMENTS_ADMIN_API + "/{tenant}/{namespace}/{topic}/{descriptor}"
DESCRIPTOR = re.compile(r"^[0-9a-f]{4}-[0-9a-f]{4}-[0-9]+$")


def _storage(request: web.Request) -> SegmentStorage:
    storage = context(request).segments
    if storage is None:
        raise web.HTTPServiceUnavailable(reason="scalable topics are disabled on this broker")
    return storage


async def _segment(request: web.Request) -> TopicName:
    """The segment topic of the path, served here (307 to its owner otherwise)."""
    info = request.match_info
    if not DESCRIPTOR.match(info["descriptor"]):
        raise ValueError(f"segment descriptor {info['descriptor']!r} is not "
                         "{hexStart}-{hexEnd}-{segmentId}, e.g. 0000-7fff-1")
    topic = TopicName("segment", info["tenant"], info["namespace"],
                      f"{info['topic']}/{info['descriptor']}")
    await require_owner(request, topic)
    return topic


@routes.put(SEGMENT)
async def create_segment(request: web.Request) -> web.Response:
    topic = await _segment(request)
    body = await json_body(request)
    if isinstance(body, list):  # PIP-468: "optional request body with subscription names"
        body = {"subscriptions": body}
    subscriptions = body.get("subscriptions", [])
    if not isinstance(subscriptions, list) or not all(isinstance(s, str) for s in subscriptions):
        raise ValueError("subscriptions must be a list of names")
    position_name = str(body.get("initialPosition", "Earliest")).upper()
    if position_name not in InitialPosition.__members__:
        raise ValueError(f"initialPosition must be Earliest or Latest, not {position_name!r}")
    position = InitialPosition[position_name]
    await _storage(request).create(topic, subscriptions, position)
    return web.Response(status=204)


@routes.post(SEGMENT + "/terminate")
async def terminate_segment(request: web.Request) -> web.Response:
    topic = await _segment(request)
    last = await _storage(request).terminate(topic)
    return web.json_response({"ledgerId": last.ledger_id if last else -1,
                              "entryId": last.entry_id if last else -1})


@routes.get(SEGMENT)
async def segment_state(request: web.Request) -> web.Response:
    topic = await _segment(request)
    state = (await _storage(request).state(topic)).to_json()
    state["clients"] = context(request).client_stats(topic)  # publishers, consumers
    return web.json_response(state)


@routes.delete(SEGMENT)
async def delete_segment(request: web.Request) -> web.Response:
    topic = await _segment(request)
    await _storage(request).delete(topic)
    return web.Response(status=204)


@routes.delete(SEGMENT + "/subscriptions/{subscription}")
async def delete_segment_subscription(request: web.Request) -> web.Response:
    topic = await _segment(request)
    await _storage(request).delete_subscription(topic, request.match_info["subscription"])
    return web.Response(status=204)
