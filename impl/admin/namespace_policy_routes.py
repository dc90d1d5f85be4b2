"""Single namespace policies on Pulsar's paths, each read (GET), set (POST) and removed
(DELETE): `messageTTL`, `retention`, `deduplication`, and backlog quotas (`backlogQuota`
to set or remove one type's quota, `backlogQuotaMap` to read them all; Pulsar has no GET
`backlogQuota`); and `schemaCompatibilityStrategy`, read (GET) and set (PUT), as Pulsar
has it.

A GET of a policy that is not set answers 204 with no body, as Pulsar's does (its JSON
null). Only the TTL has an effect on our brokers (replicators skip expired messages);
retention and backlog quotas are stored, not enforced (impl/retention.py); deduplication
switches impl/broker/deduplication.py on the namespace's topics that set none of their own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiohttp import web

from impl.admin.bodies import json_body, json_boolean, json_object
from impl.admin.context import context
from impl.admin.namespace_routes import namespace_of
from impl.broker.schemas.compatibility import Strategy, effective
from impl.json_fields import INT32_MAX, whole
from impl.resources import NamespacePolicies
from impl.retention import BacklogQuota, RetentionPolicies, quota_type

routes = web.RouteTableDef()

NAMESPACE = "/admin/v2/namespaces/{tenant}/{namespace}"
NO_CONTENT = 204


async def _policy(request: web.Request, pick: Callable[[NamespacePolicies], Any]) -> web.Response:
    policies = await asyncio.to_thread(context(request).resources.policies, namespace_of(request))
    value = pick(policies)
    return web.Response(status=NO_CONTENT) if value is None else web.json_response(value)


async def _change(request: web.Request, method: str, *args: Any) -> web.Response:
    resources = context(request).resources
    await asyncio.to_thread(getattr(resources, method), namespace_of(request), *args)
    return web.Response(status=NO_CONTENT)


@routes.get(NAMESPACE + "/messageTTL")
async def get_message_ttl(request: web.Request) -> web.Response:
    return await _policy(request, lambda p: p.message_ttl_in_seconds)


@routes.post(NAMESPACE + "/messageTTL")
async def set_message_ttl(request: web.Request) -> web.Response:
    """Body: a whole number of seconds, a Java `int` (400 beyond; 412 when negative)."""
    seconds = whole(await json_body(request), "the message TTL in seconds", -INT32_MAX - 1,
                    INT32_MAX)
    return await _change(request, "set_message_ttl", seconds)


@routes.delete(NAMESPACE + "/messageTTL")
async def remove_message_ttl(request: web.Request) -> web.Response:
    return await _change(request, "set_message_ttl", None)


@routes.get(NAMESPACE + "/retention")
async def get_retention(request: web.Request) -> web.Response:
    return await _policy(request, lambda p: p.retention_policies and p.retention_policies.to_json())


@routes.post(NAMESPACE + "/retention")
async def set_retention(request: web.Request) -> web.Response:
    """Body: `{"retentionTimeInMinutes", "retentionSizeInMB"}` (-1: unlimited)."""
    retention = RetentionPolicies.from_json(await json_object(request))
    return await _change(request, "set_retention", retention)


@routes.delete(NAMESPACE + "/retention")
async def remove_retention(request: web.Request) -> web.Response:
    return await _change(request, "set_retention", None)


@routes.get(NAMESPACE + "/deduplication")
async def get_deduplication(request: web.Request) -> web.Response:
    return await _policy(request, lambda p: p.deduplication_enabled)


@routes.post(NAMESPACE + "/deduplication")
async def set_deduplication(request: web.Request) -> web.Response:
    """Body: `true` or `false`."""
    return await _change(request, "set_deduplication", await json_boolean(request))


@routes.delete(NAMESPACE + "/deduplication")
async def remove_deduplication(request: web.Request) -> web.Response:
    return await _change(request, "set_deduplication", None)


@routes.get(NAMESPACE + "/backlogQuotaMap")
async def get_backlog_quotas(request: web.Request) -> web.Response:
    """Every quota by type (`{}` when none is set)."""
    policies = await asyncio.to_thread(context(request).resources.policies, namespace_of(request))
    return web.json_response(policies.to_json()["backlog_quota_map"])


@routes.post(NAMESPACE + "/backlogQuota")
async def set_backlog_quota(request: web.Request) -> web.Response:
    """Body: `{"limitSize", "limitTime", "policy"}`; `?backlogQuotaType=` picks the type."""
    kind = quota_type(request.query.get("backlogQuotaType"))
    quota = BacklogQuota.from_json(await json_object(request))
    return await _change(request, "set_backlog_quota", kind, quota)


@routes.delete(NAMESPACE + "/backlogQuota")
async def remove_backlog_quota(request: web.Request) -> web.Response:
    kind = quota_type(request.query.get("backlogQuotaType"))
    return await _change(request, "set_backlog_quota", kind, None)


@routes.get(NAMESPACE + "/schemaCompatibilityStrategy")
async def get_schema_compatibility_strategy(request: web.Request) -> web.Response:
    """A strategy the namespace has not chosen reads as the broker's default (FULL)."""
    return await _policy(request, lambda p: effective(
        Strategy.named(p.schema_compatibility_strategy)).value)


@routes.put(NAMESPACE + "/schemaCompatibilityStrategy")
async def set_schema_compatibility_strategy(request: web.Request) -> web.Response:
    """Body: a strategy's name as a JSON string, e.g. `"BACKWARD"` (400 for another)."""
    name = await json_body(request, default="")
    if not isinstance(name, str):
        raise ValueError("request body must be a strategy name as a JSON string")
    return await _change(request, "set_schema_compatibility_strategy",
                         Strategy.named(name).value)
