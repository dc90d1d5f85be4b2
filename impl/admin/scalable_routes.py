"""`/admin/v2/scalable/{tenant}/{namespace}[/{topic}...]`: PIP-468's Scalable Topics admin
API. Any broker answers; a mutation that needs the controller leader (split, merge,
subscriptions) is redirected with a 307 to the leader's admin URL when this broker's
controller does not lead. Scalable-topic errors map to statuses here (docs/scalable-topics.md).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from aiohttp import web

from impl.admin.bodies import json_object
from impl.admin.context import context
from impl.admin.errors import error_response
from impl.naming.topic_name import NamespaceName
from impl.scalable.errors import (
    InvalidMetadata,
    LayoutUpdateConflict,
    NotLeader,
    ScalableTopicExists,
    ScalableTopicNotFound,
    SegmentNotActive,
    SegmentNotFound,
    SegmentsNotAdjacent,
    SegmentTooSmall,
    SubscriptionNotFound,
)
from impl.scalable.layout import SegmentLayout
from impl.scalable.service import ScalableTopicService
from impl.scalable.sessions import SubscriptionType
from wire.topic_names import ScalableTopicName

routes = web.RouteTableDef()

NAMESPACE = "/admin/v2/scalable/{tenant}/{namespace}"
TOPIC = NAMESPACE + "/{topic}"
T = TypeVar("T")

STATUS: list[tuple[type[BaseException], int]] = [
    (ScalableTopicNotFound, 404),
    (SegmentNotFound, 404),
    (SubscriptionNotFound, 404),
    (ScalableTopicExists, 409),
    (SegmentNotActive, 409),
    (LayoutUpdateConflict, 409),
    (SegmentsNotAdjacent, 412),
    (SegmentTooSmall, 412),
    (InvalidMetadata, 500),
]


def _service(request: web.Request) -> ScalableTopicService:
    service = context(request).scalable
    if service is None:
        raise web.HTTPServiceUnavailable(reason="scalable topics are disabled on this broker")
    return service


def _topic(request: web.Request) -> ScalableTopicName:
    info = request.match_info
    return ScalableTopicName(info["tenant"], info["namespace"], info["topic"])


async def _run(request: web.Request, action: Callable[[ScalableTopicService], T]) -> T:
    """Run a blocking service call on the service's threads; map its domain errors."""
    service = _service(request)
    try:
        return await asyncio.get_running_loop().run_in_executor(
            service.executor, action, service)
    except NotLeader as exc:
        leader = exc.leader_url and await asyncio.get_running_loop().run_in_executor(
            service.executor, service.leader_web_url, exc.leader_url)
        if not leader:
            raise web.HTTPServiceUnavailable(reason=str(exc)) from None
        raise web.HTTPTemporaryRedirect(location=f"{leader}{request.rel_url}") from None
    except tuple(kind for kind, _ in STATUS) as exc:
        status = next(s for kind, s in STATUS if isinstance(exc, kind))
        raise _JsonError(status, str(exc)) from None


class _JsonError(web.HTTPException):
    """An error response with Pulsar's `{"reason": ...}` body, raised from `_run`."""

    def __init__(self, status: int, reason: str) -> None:
        self.status_code = status
        super().__init__(text=error_response(status, reason).text,
                         content_type="application/json")


def _layout_json(request: web.Request, layout: SegmentLayout) -> web.Response:
    """The layout's `ScalableTopicMetadata`, each hash range with both ends inclusive as in
    the DAG the clients route by (mutant `admin-range-start-exclusive` writes each start
    one past the segment's first hash)."""
    metadata = layout.to_metadata()
    service = context(request).scalable
    if service is not None and service.mutants.on("admin-range-start-exclusive"):
        for segment in metadata["segments"].values():
            segment["hashRange"]["start"] += 1
    return web.json_response(metadata)


@routes.get(NAMESPACE)
async def list_topics(request: web.Request) -> web.Response:
    info = request.match_info
    namespace = NamespaceName(info["tenant"], info["namespace"])
    await asyncio.to_thread(context(request).resources.policies, namespace)  # 404 if missing
    return web.json_response(await _run(request, lambda s: s.list_topics(namespace)))


@routes.put(TOPIC)
async def create_topic(request: web.Request) -> web.Response:
    """Body `{"numInitialSegments": n, "properties": {...}}` (or `?numInitialSegments=n`);
    one segment when neither says."""
    topic = _topic(request)
    body = await json_object(request)
    count = int(body.get("numInitialSegments", request.query.get("numInitialSegments", 1)))
    if not 1 <= count <= 65536:
        raise ValueError(f"numInitialSegments must be in 1..65536, not {count}")
    given = body.get("properties") or {}
    if not isinstance(given, dict):
        raise ValueError("properties must be a JSON object")
    properties = {str(k): str(v) for k, v in given.items()}
    await asyncio.to_thread(context(request).resources.policies, NamespaceName(
        topic.tenant, topic.namespace))
    layout = await _run(request, lambda s: s.create_topic(topic, count, properties))
    return _layout_json(request, layout)


@routes.get(TOPIC)
async def get_metadata(request: web.Request) -> web.Response:
    topic = _topic(request)
    return _layout_json(request, await _run(request, lambda s: s.layout(topic)))


@routes.delete(TOPIC)
async def delete_topic(request: web.Request) -> web.Response:
    topic = _topic(request)
    await _run(request, lambda s: s.delete_topic(topic))
    return web.Response(status=204)


@routes.get(TOPIC + "/stats")
async def get_stats(request: web.Request) -> web.Response:
    topic = _topic(request)
    return web.json_response(await _run(request, lambda s: s.stats(topic)))


@routes.put(TOPIC + "/subscriptions/{subscription}")
async def create_subscription(request: web.Request) -> web.Response:
    """Body `{"type": "STREAM" | "CHECKPOINT"}`, STREAM when empty."""
    topic, name = _topic(request), request.match_info["subscription"]
    body = await json_object(request)
    kind = SubscriptionType(str(body.get("type", "STREAM")).upper())
    await _run(request, lambda s: s.create_subscription(topic, name, kind))
    return web.Response(status=204)


@routes.delete(TOPIC + "/subscriptions/{subscription}")
async def delete_subscription(request: web.Request) -> web.Response:
    topic, name = _topic(request), request.match_info["subscription"]
    await _run(request, lambda s: s.delete_subscription(topic, name))
    return web.Response(status=204)


@routes.post(TOPIC + "/split/{segment_id}")
async def split_segment(request: web.Request) -> web.Response:
    topic, segment = _topic(request), int(request.match_info["segment_id"])
    layout = await _run(request, lambda s: s.as_leader(topic, lambda c: c.split_segment(segment)))
    return _layout_json(request, layout)


@routes.post(TOPIC + "/merge/{first_id}/{second_id}")
async def merge_segments(request: web.Request) -> web.Response:
    topic = _topic(request)
    first, second = int(request.match_info["first_id"]), int(request.match_info["second_id"])
    layout = await _run(request, lambda s: s.as_leader(
        topic, lambda c: c.merge_segments(first, second)))
    return _layout_json(request, layout)


