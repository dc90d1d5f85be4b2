"""Retrying a client operation until a deadline: brokers come and go during failovers,
so every operation of the scalable-topic client retries what a failover can cause. A
refusal of the client's token or role (`NotPermitted`) is no such thing: it is raised at
once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from wire.errors import BrokerError, ConnectionClosed, NotPermitted

log = logging.getLogger(__name__)

T = TypeVar("T")

TRANSIENT: tuple[type[BaseException], ...] = (ConnectionClosed, OSError, BrokerError,
                                              TimeoutError)
"""What a broker going away, or one not yet serving a topic, looks like to a client."""


async def retrying(what: str, attempt: Callable[[], Awaitable[T]], deadline: float,
                   retry_on: tuple[type[BaseException], ...] = TRANSIENT) -> T:
    """Await `attempt()` until it succeeds or `deadline` (loop time) passes, backing off
    from 0.1 s to 1 s between attempts; the last failure is raised, and `NotPermitted`
    at once."""
    loop = asyncio.get_running_loop()
    delay = 0.1
    while True:
        try:
            return await attempt()
        except retry_on as exc:
            if isinstance(exc, NotPermitted) or loop.time() + delay > deadline:
                raise
            log.info("%s failed (%s); retrying", what, exc)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)
