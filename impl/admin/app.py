"""The admin application: one route table per resource, one error mapping."""

from __future__ import annotations

from aiohttp import web

from impl.admin import (
    broker_routes,
    cluster_routes,
    metrics_routes,
    namespace_policy_routes,
    namespace_routes,
    non_persistent_routes,
    partitioned_routes,
    permission_routes,
    scalable_routes,
    schema_routes,
    segment_routes,
    subscription_routes,
    tenant_routes,
    topic_policy_routes,
    topic_routes,
)
from impl.admin.access_control import access_middleware
from impl.admin.bodies import MAX_BODY_BYTES
from impl.admin.context import CONTEXT, AdminContext
from impl.admin.errors import errors_middleware
from impl.security.guard import OPEN_GUARD, Guard


def build_admin_app(ctx: AdminContext, guard: Guard = OPEN_GUARD) -> web.Application:
    """`guard` is asked before every handler; errors_middleware, outermost, gives its
    refusals Pulsar's JSON body too."""
    app = web.Application(middlewares=[errors_middleware, access_middleware(guard)],
                          client_max_size=MAX_BODY_BYTES)
    app[CONTEXT] = ctx
    for module in (cluster_routes, tenant_routes, namespace_routes, namespace_policy_routes,
                   topic_routes, topic_policy_routes, subscription_routes, broker_routes,
                   scalable_routes, segment_routes, schema_routes, partitioned_routes,
                   non_persistent_routes, permission_routes):
        app.add_routes(module.routes)
    metrics_routes.install(app)
    return app
