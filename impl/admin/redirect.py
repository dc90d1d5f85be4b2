"""Requests for a topic or bundle this broker does not own go to its owner with a 307, as
Pulsar's admin API does; the redirect carries `authoritative=true` so that the target
claims a free bundle instead of redirecting again."""

from __future__ import annotations

from aiohttp import web

from impl.admin.context import context
from impl.naming.topic_name import TopicName
from impl.ownership.brokers import BrokerInfo


def redirect_to(owner: BrokerInfo, request: web.Request) -> web.HTTPTemporaryRedirect:
    url = request.rel_url.update_query(authoritative="true")
    return web.HTTPTemporaryRedirect(location=f"{owner.web_url}{url}")


def authoritative(request: web.Request) -> bool:
    return request.query.get("authoritative", "false").lower() == "true"


async def require_owner(request: web.Request, topic: TopicName) -> None:
    """Return when this broker owns the topic's bundle (claiming it if it is ours to
    claim); raise the redirect to its owner otherwise."""
    result = await context(request).namespaces.lookup(topic, authoritative(request))
    if not result.is_self:
        raise redirect_to(result.owner, request)
