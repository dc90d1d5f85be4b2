"""Partitioned topics on Pulsar's paths: `PUT|POST|GET|DELETE .../{topic}/partitions`
(create, grow, read, delete), `GET .../{topic}/partitioned-stats`, and
`GET /admin/v2/persistent/{tenant}/{namespace}/partitioned` (the partitioned topics, where
the namespace's plain list names their partitions).

The metadata lives in the metadata store (impl/partitioned_topics.py), so any broker
answers for it. What acts on partitions (stats, delete) asks each partition's own path on
this admin API, as Pulsar asks its own admin client: a partition owned elsewhere is
redirected to its owner like any single-topic request, and the broker presents its own
token (impl/admin/broker_client.py).
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
from aiohttp import web

from impl.admin.bodies import json_body
from impl.admin.broker_client import broker_client_session
from impl.admin.context import context
from impl.admin.errors import error_response
from impl.admin.namespace_routes import namespace_of
from impl.admin.topic_routes import TOPIC, topic_of
from impl.admin.topic_stats import partitioned_stats
from impl.naming.topic_name import TopicName
from impl.partitioned_topics import PartitionedTopicResources
from impl.resources import ResourceNotFound

routes = web.RouteTableDef()

PARTITIONS = TOPIC + "/partitions"


def _partitioned(request: web.Request) -> PartitionedTopicResources:
    return PartitionedTopicResources(context(request).store)


async def _count(request: web.Request) -> int:
    """The body: a bare JSON number of partitions, as Pulsar's admin client sends it."""
    value = await json_body(request, default="")
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("the request body must be the number of partitions")
    return value


async def _partitions_of(request: web.Request) -> tuple[TopicName, int]:
    """The partitioned topic in the path and its count; 404 when it is not partitioned."""
    topic = topic_of(request)
    count = await asyncio.to_thread(_partitioned(request).partitions, topic)
    if count == 0:
        raise ResourceNotFound("partitioned topic", str(topic))
    return topic, count


async def _ask_partitions(request: web.Request, method: str, topic: TopicName, count: int,
                          suffix: str = "") -> dict[str, tuple[int, Any]]:
    """Send `method` to each partition's path (`suffix` appended) on this admin API,
    following redirects to owners; each partition's status and JSON answer."""
    base = context(request).namespaces.me.web_url
    query = {"force": request.query["force"]} if "force" in request.query else {}

    async def ask(session: aiohttp.ClientSession, partition: TopicName) -> tuple[int, Any]:
        url = (f"{base}/admin/v2/persistent/{partition.tenant}/{partition.namespace}/"
               f"{partition.local_name}{suffix}")
        async with session.request(method, url, params=query) as response:
            body = await response.read()
            return response.status, (await response.json() if body else None)

    partitions = [topic.partition(n) for n in range(count)]
    async with broker_client_session(context(request).broker_client_token) as session:
        answers = await asyncio.gather(*(ask(session, p) for p in partitions))
    return {str(p): answer for p, answer in zip(partitions, answers, strict=True)}


def _first_failure(answers: dict[str, tuple[int, Any]]) -> web.Response | None:
    for partition, (status, body) in answers.items():
        if status >= 400:
            reason = body.get("reason", "") if isinstance(body, dict) else ""
            return error_response(status, f"{partition}: {reason}")
    return None


@routes.get("/admin/v2/persistent/{tenant}/{namespace}/partitioned")
async def list_partitioned(request: web.Request) -> web.Response:
    namespace = namespace_of(request)
    await asyncio.to_thread(context(request).resources.policies, namespace)
    return web.json_response(await asyncio.to_thread(
        _partitioned(request).partitioned_topics, namespace, "persistent"))


@routes.put(PARTITIONS)
async def create_partitioned(request: web.Request) -> web.Response:
    """409 when the name is taken; 406 for a count of 0 or less, or above the bound."""
    topic, count = topic_of(request), await _count(request)
    await asyncio.to_thread(context(request).resources.policies, topic.namespace_name)
    await asyncio.to_thread(_partitioned(request).create, topic, count)
    return web.Response(status=204)


@routes.post(PARTITIONS)
async def grow_partitioned(request: web.Request) -> web.Response:
    """Only more partitions are accepted (409 otherwise), as in Pulsar."""
    topic, count = topic_of(request), await _count(request)
    await asyncio.to_thread(_partitioned(request).grow, topic, count)
    return web.Response(status=204)


@routes.get(PARTITIONS)
async def get_partitions(request: web.Request) -> web.Response:
    """`{"partitions": 0}` for a topic that is not partitioned, as in Pulsar."""
    count = await asyncio.to_thread(_partitioned(request).partitions, topic_of(request))
    return web.json_response({"partitions": count})


@routes.delete(PARTITIONS)
async def delete_partitioned(request: web.Request) -> web.Response:
    """Delete every partition (refused while one has clients, unless `force=true`),
    then the metadata."""
    topic, count = await _partitions_of(request)
    answers = await _ask_partitions(request, "DELETE", topic, count)
    refused = _first_failure({p: a for p, a in answers.items() if a[0] != 404})
    if refused is not None:
        return refused
    await asyncio.to_thread(_partitioned(request).delete, topic)
    return web.Response(status=204)


@routes.get(TOPIC + "/partitioned-stats")
async def get_partitioned_stats(request: web.Request) -> web.Response:
    topic, count = await _partitions_of(request)
    answers = await _ask_partitions(request, "GET", topic, count, "/stats")
    failed = _first_failure(answers)
    if failed is not None:
        return failed
    return web.json_response(partitioned_stats({p: body for p, (_, body) in answers.items()}))
