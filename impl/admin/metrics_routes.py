"""`GET /metrics`: Prometheus text for the topics this broker serves (impl/admin/prometheus.py),
on the path Pulsar's brokers serve it."""

from __future__ import annotations

from aiohttp import web

from impl.admin.context import context, front_end
from impl.admin.prometheus import RateSampler, render

routes = web.RouteTableDef()

RATES: web.AppKey[RateSampler] = web.AppKey("starquake.admin.rates", RateSampler)
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


@routes.get("/metrics")
@routes.get("/metrics/")
async def metrics(request: web.Request) -> web.Response:
    text = render(context(request).cluster, front_end(request).loaded_topics(),
                  request.app[RATES])
    return web.Response(body=text.encode(), headers={"Content-Type": CONTENT_TYPE})


def install(app: web.Application) -> None:
    """The route and the counters its rates are computed from."""
    app[RATES] = RateSampler()
    app.add_routes(routes)
