"""Pulsar's keep-alive, which both ends of a binary-protocol connection run: a connection
silent for one interval is pinged, and given up when its ping goes an interval unanswered.
It is what turns a peer that vanished without a FIN (a WAN cut that drops packets, a
frozen host) into a closed connection within seconds instead of TCP's many minutes."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from wire.pulsar_api_pb2 import BaseCommand, CommandPing, CommandPong

KEEPALIVE_S = 30.0
"""Pulsar's interval on both ends: the broker's `keepAliveIntervalSeconds` and its
clients' (the Java and Python clients' `keep_alive_interval`)."""


def ping() -> BaseCommand:
    return BaseCommand(type=BaseCommand.PING, ping=CommandPing())


def pong() -> BaseCommand:
    return BaseCommand(type=BaseCommand.PONG, pong=CommandPong())


class Silence:
    """When the connection last heard its peer; every read counts, a PONG included."""

    def __init__(self) -> None:
        self.last_heard = time.monotonic()

    def heard(self) -> None:
        self.last_heard = time.monotonic()

    def seconds(self) -> float:
        return time.monotonic() - self.last_heard


async def keep_alive(interval: float, silence: Silence, send_ping: Callable[[], None],
                     give_up: Callable[[float], None]) -> None:
    """Run beside the connection's reader until cancelled, or until `give_up` has been
    called with the seconds of silence that ended it.

    Checked every half interval: a peer silent for an interval is pinged, and given up once
    that ping has gone an interval with nothing heard since, as Pulsar closes a connection
    whose ping went unanswered for a keep-alive interval. Checking only once an interval
    gave up live peers: heard just after one check, a peer was not yet silent enough to be
    pinged at the next, and past two intervals at the one after, never pinged at all."""
    pinged: tuple[float, float] | None = None
    """(when the peer was last heard, the silence in seconds) as the unanswered ping left."""
    while True:
        await asyncio.sleep(interval / 2)
        silent = silence.seconds()
        if pinged is not None and silence.last_heard == pinged[0]:
            if silent - pinged[1] >= interval:
                give_up(silent)
                return
        elif silent >= interval:
            pinged = (silence.last_heard, silent)
            send_ping()
        else:
            pinged = None
