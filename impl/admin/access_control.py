"""Who may call which admin path, checked before any handler runs: the credentials of
`Authorization: Bearer <token>` (401 when missing or invalid), then the role a path needs
(403 when the caller's role lacks it), as Pulsar's admin API answers.

What a path needs, following Pulsar's defaults: clusters' and tenants' changes and
anything broker-wide need a superuser; a tenant and its namespaces need an admin of the
tenant; a topic's reads need leave to look it up (produce or consume), reading its
messages (peek) and moving its subscriptions need consume, other changes a tenant admin.
The health check and `/metrics` stay open, as a liveness probe must reach them. The debug
endpoints do not exist unless switched on, and then only for superusers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Middleware

from impl.naming.topic_name import NamespaceName
from impl.security.authorization import CONSUME, LOOKUP
from impl.security.errors import NotAuthenticated, NotAuthorized
from impl.security.guard import Guard
from wire.tokens import BEARER, TOKEN_METHOD

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

OPEN_PATHS = ("/admin/v2/brokers/health", "/metrics", "/metrics/")
"""Matched whole: a path that only starts with one (`/admin/v2/brokers/health/{broker}/
ownedNamespaces`, which routes as a cluster named `health`) needs credentials."""
DEBUG_PREFIX = "/admin/v2/debug/"
TOPIC_RESOURCES = frozenset({"persistent", "non-persistent", "schemas", "scalable",
                             "segments"})
"""`/admin/v2/<resource>/{tenant}/{namespace}/...`: paths about a namespace's topics."""
SUBSCRIPTION_SEGMENTS = frozenset({"subscription", "subscriptions", "all_subscription"})


@dataclass(frozen=True)
class Needs:
    """What a request needs: a superuser, a tenant's admin, or one of `actions` on a
    namespace; none of these: any authenticated role."""

    superuser: bool = False
    tenant: str | None = None
    namespace: NamespaceName | None = None
    actions: frozenset[str] = frozenset()


SUPERUSER = Needs(superuser=True)
AUTHENTICATED = Needs()


def read_by_any_role(method: str) -> Needs:
    """Reads by any authenticated role, changes by a superuser: a broker's clusters, the
    lookup service's records."""
    return AUTHENTICATED if method == "GET" else SUPERUSER


def _topic_needs(method: str, namespace: NamespaceName, rest: list[str]) -> Needs:
    """`rest`: the path after `{tenant}/{namespace}`."""
    if method == "GET":
        peeking = "position" in rest
        return Needs(namespace=namespace, actions=frozenset({CONSUME}) if peeking else LOOKUP)
    if SUBSCRIPTION_SEGMENTS & set(rest):
        return Needs(namespace=namespace, actions=frozenset({CONSUME}))
    return Needs(tenant=namespace.tenant)


def needs(method: str, path: str) -> Needs:
    """What `method` on `path` needs of the caller's role."""
    parts = path.strip("/").split("/")
    if parts[:2] == ["lookup", "v2"] and len(parts) >= 6:
        return Needs(namespace=NamespaceName(parts[4], parts[5]), actions=LOOKUP)
    if parts[:2] != ["admin", "v2"] or len(parts) < 3:
        return SUPERUSER
    resource, rest = parts[2], parts[3:]
    if resource == "clusters":
        return read_by_any_role(method)
    if resource == "tenants":
        return Needs(tenant=rest[0]) if len(rest) == 1 and method == "GET" else SUPERUSER
    if resource == "namespaces" and rest:
        return Needs(tenant=rest[0])
    if resource in TOPIC_RESOURCES and len(rest) >= 2:
        return _topic_needs(method, NamespaceName(rest[0], rest[1]), rest[2:])
    return SUPERUSER


def check(guard: Guard, role: str | None, required: Needs) -> None:
    """Raise NotAuthorized unless `role` meets `required` (blocking: reads metadata)."""
    if required.superuser:
        guard.check_superuser(role)
    elif required.tenant is not None:
        guard.check_tenant_admin(role, required.tenant)
    elif required.namespace is not None:
        guard.check_namespace(role, required.namespace, required.actions)


def bearer_role(guard: Guard, request: web.Request) -> str | None:
    """The role the request's bearer token proves (None while authentication is off)."""
    header = request.headers.get("Authorization", "")
    method = TOKEN_METHOD if header.startswith(BEARER) else ""
    return guard.authenticate(method, header.removeprefix(BEARER))


def access_middleware(guard: Guard, needs_of: Callable[[str, str], Needs] = needs,
                      open_paths: tuple[str, ...] = OPEN_PATHS) -> Middleware:
    """The broker's rules by default; another HTTP API of the system (the lookup
    service's) passes its own `needs_of(method, path)` and the paths anyone may reach,
    each matched whole."""
    @web.middleware
    async def access(request: web.Request, handler: Handler) -> web.StreamResponse:
        path = request.path
        if path.startswith(DEBUG_PREFIX) and not guard.config.debug_endpoints:
            raise web.HTTPNotFound(reason="debug endpoints are switched off on this broker")
        if path in open_paths:
            return await handler(request)
        try:
            role = bearer_role(guard, request)
            if guard.authorizer is not None:
                await asyncio.to_thread(check, guard, role, needs_of(request.method, path))
        except NotAuthenticated as exc:
            raise web.HTTPUnauthorized(reason=str(exc)) from None
        except NotAuthorized as exc:
            raise web.HTTPForbidden(reason=str(exc)) from None
        return await handler(request)
    return access
