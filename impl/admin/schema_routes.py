"""`/admin/v2/schemas/{tenant}/{namespace}/{topic}/...`: a topic's schemas as Pulsar's
SchemasResource serves them (read the latest, one version or all, upload, delete, test a
schema's compatibility). The strategy is a namespace policy (namespace_policy_routes.py).

The registry lives in ZooKeeper, so any broker answers for any topic (no redirect to the
owner). Refusals: 404 no schema (or no such namespace), 409 an incompatible upload, 422 a
definition that does not parse.
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from impl.admin.bodies import json_object
from impl.admin.context import context, schema_registry
from impl.broker.schemas.compatibility import SchemaData, effective, type_name, type_named
from impl.broker.schemas.registry import StoredSchema
from impl.naming.topic_name import TopicName
from impl.resources import ResourceNotFound

routes = web.RouteTableDef()

SCHEMAS = "/admin/v2/schemas/{tenant}/{namespace}/{topic}"
ACCEPTED = 202


def _topic(request: web.Request) -> TopicName:
    info = request.match_info
    return TopicName("persistent", info["tenant"], info["namespace"], info["topic"])


def _answer(stored: StoredSchema) -> dict[str, Any]:
    """Pulsar's `GetSchemaResponse`."""
    assert stored.schema is not None
    return {"version": stored.version, "type": type_name(stored.schema.type),
            "timestamp": stored.timestamp_ms,
            "data": stored.schema.data.decode(errors="replace"),
            "properties": dict(stored.schema.properties)}


async def _payload(request: web.Request) -> SchemaData:
    """Pulsar's `PostSchemaPayload`: `{"type", "schema", "properties"}`."""
    body = await json_object(request)
    properties = body.get("properties") or {}
    if not isinstance(properties, dict):
        raise ValueError("properties must be a JSON object")
    return SchemaData(type_named(str(body.get("type", ""))),
                      str(body.get("schema") or "").encode(),
                      tuple(sorted((str(k), str(v)) for k, v in properties.items())))


async def _existing_namespace(request: web.Request, topic: TopicName) -> None:
    await asyncio.to_thread(context(request).resources.policies, topic.namespace_name)


@routes.get(SCHEMAS + "/schema")
async def get_latest(request: web.Request) -> web.Response:
    return await _one(request, None)


@routes.get(SCHEMAS + "/schema/{version}")
async def get_version(request: web.Request) -> web.Response:
    try:
        version = int(request.match_info["version"])
    except ValueError:
        raise ValueError("a schema version is a whole number") from None
    return await _one(request, version)


async def _one(request: web.Request, version: int | None) -> web.Response:
    topic = _topic(request)
    found = await schema_registry(request).get(topic, version)
    if found is None:
        raise ResourceNotFound("schema of topic", str(topic))
    return web.json_response(_answer(found))


@routes.get(SCHEMAS + "/schemas")
async def get_all(request: web.Request) -> web.Response:
    """Every current version (`GetAllVersionsSchemaResponse`); none: 404."""
    topic = _topic(request)
    history = [stored for stored in await schema_registry(request).history(topic)
               if stored.schema is not None]
    if not history:
        raise ResourceNotFound("schema of topic", str(topic))
    return web.json_response({"getSchemaResponses": [_answer(s) for s in history]})


@routes.post(SCHEMAS + "/schema")
async def post_schema(request: web.Request) -> web.Response:
    """Register a schema as a producer would: its existing version, or a new one the
    namespace's strategy accepts (`PostSchemaResponse`)."""
    topic = _topic(request)
    await _existing_namespace(request, topic)
    version = await schema_registry(request).put_if_absent(topic, await _payload(request))
    return web.json_response({"version": {"version": version}})


@routes.delete(SCHEMAS + "/schema")
async def delete_schema(request: web.Request) -> web.Response:
    """Mark the schema deleted; the answer is the marker's version (-1: there was no
    schema). `force` is accepted and changes nothing: the versions stay numbered."""
    topic = _topic(request)
    await _existing_namespace(request, topic)
    version = await schema_registry(request).delete(topic)
    return web.json_response({"version": -1 if version is None else version})


@routes.post(SCHEMAS + "/compatibility")
async def test_compatibility(request: web.Request) -> web.Response:
    """Whether an upload of the schema would be accepted now (`IsCompatibilityResponse`,
    202 as Pulsar answers it)."""
    topic = _topic(request)
    await _existing_namespace(request, topic)
    compatible, strategy = await schema_registry(request).compatible(
        topic, await _payload(request))
    return web.json_response({"isCompatibility": compatible,
                              "schemaCompatibilityStrategy": effective(strategy).value},
                             status=ACCEPTED)
