"""The admin requests a broker makes itself carry its client token on every hop: a
partition's owner is another broker, reached by a redirect to another port, where aiohttp
would drop an `Authorization` header set once on the request."""

from __future__ import annotations

import asyncio

from aiohttp import hdrs, web
from aiohttp.test_utils import TestServer

from impl.admin.broker_client import broker_client_session


def _presented(token: str | None) -> str:
    """The `Authorization` header that reaches the owner after the first broker's 307."""

    async def owner(request: web.Request) -> web.Response:
        return web.json_response(request.headers.get(hdrs.AUTHORIZATION, ""))

    async def main() -> str:
        owner_app = web.Application()
        owner_app.router.add_get("/stats", owner)
        async with TestServer(owner_app) as owner_server:
            async def first(_request: web.Request) -> web.Response:
                raise web.HTTPTemporaryRedirect(str(owner_server.make_url("/stats")))

            first_app = web.Application()
            first_app.router.add_get("/stats", first)
            async with TestServer(first_app) as first_server, \
                    broker_client_session(token) as session, \
                    session.get(first_server.make_url("/stats")) as response:
                return str(await response.json())

    return asyncio.run(main())


def test_the_broker_token_survives_a_redirect_to_another_broker() -> None:
    assert _presented("the.broker.token") == "Bearer the.broker.token"


def test_without_a_token_nothing_is_presented() -> None:
    assert _presented(None) == ""
