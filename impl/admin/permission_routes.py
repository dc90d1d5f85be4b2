"""A namespace's permissions, on Pulsar's paths: grant a role a list of actions (POST, the
body Pulsar's `grant-permission` sends), read every role's actions (GET), revoke a role
(DELETE). What they grant is enforced only on a broker with authorization switched on
(impl/security/authorization.py); only tenant admins reach these paths there."""

from __future__ import annotations

import asyncio

from aiohttp import web

from impl.admin.bodies import json_string_list
from impl.admin.context import context
from impl.admin.namespace_routes import namespace_of
from impl.security.authorization import ACTIONS

routes = web.RouteTableDef()

PERMISSIONS = "/admin/v2/namespaces/{tenant}/{namespace}/permissions"
NO_CONTENT = 204


@routes.get(PERMISSIONS)
async def get_permissions(request: web.Request) -> web.Response:
    policies = await asyncio.to_thread(context(request).resources.policies,
                                       namespace_of(request))
    return web.json_response({role: list(actions) for role, actions in policies.permissions})


@routes.post(PERMISSIONS + "/{role}")
async def grant_permission(request: web.Request) -> web.Response:
    """Body: the actions, e.g. `["produce", "consume"]` (Pulsar's `AuthAction` names)."""
    actions = await json_string_list(request)
    unknown = sorted(set(actions) - ACTIONS)
    if unknown:
        raise ValueError(f"unknown actions {unknown}; known: {sorted(ACTIONS)}")
    await asyncio.to_thread(context(request).resources.grant_permission,
                            namespace_of(request), request.match_info["role"],
                            tuple(sorted(set(actions))))
    return web.Response(status=NO_CONTENT)


@routes.delete(PERMISSIONS + "/{role}")
async def revoke_permission(request: web.Request) -> web.Response:
    await asyncio.to_thread(context(request).resources.revoke_permission,
                            namespace_of(request), request.match_info["role"])
    return web.Response(status=NO_CONTENT)
