"""The admin requests a broker makes itself (to its own admin API, following redirects to
the brokers that own what it asks about), as Pulsar's brokers use their internal admin
client: they present the broker's own token (`--broker-client-token-file`), not the
caller's. The caller's leave was checked already, on the request that led here."""

from __future__ import annotations

import aiohttp
from aiohttp import hdrs

from wire.tokens import BEARER

TIMEOUT = aiohttp.ClientTimeout(total=30)


def broker_client_session(token: str | None) -> aiohttp.ClientSession:
    """A session whose every request carries `token` (None: no credentials)."""
    if token is None:
        return aiohttp.ClientSession(timeout=TIMEOUT)
    credentials = f"{BEARER}{token}"

    async def present(request: aiohttp.ClientRequest,
                      handler: aiohttp.ClientHandlerType) -> aiohttp.ClientResponse:
        # Set on every hop: aiohttp drops Authorization at a redirect to another
        # host:port, and the owner of a partition is such another broker.
        request.headers[hdrs.AUTHORIZATION] = credentials
        return await handler(request)

    return aiohttp.ClientSession(timeout=TIMEOUT, middlewares=(present,))
