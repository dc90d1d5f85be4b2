"""Pulsar's keep-alive, which both ends of a binary-protocol connection run: a connection
silent for one interval is pinged, and one silent for two is given up. It is what turns a
peer that vanished without a FIN (a WAN cut that drops packets, a frozen host) into a
closed connection within seconds instead of TCP's many minutes."""

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
        self._last_heard = time.monotonic()

    def heard(self) -> None:
        self._last_heard = time.monotonic()

    def seconds(self) -> float:
        return time.monotonic() - self._last_heard


async def keep_alive(interval: float, silence: Silence, send_ping: Callable[[], None],
                     give_up: Callable[[float], None]) -> None:
    """Run beside the connection's reader until cancelled, or until `give_up` has been
    called with the seconds of silence that ended it."""
    while True:
        await asyncio.sleep(interval)
        silent = silence.seconds()
        if silent >= 2 * interval:
            give_up(silent)
            return
        if silent >= interval:
            send_ping()
