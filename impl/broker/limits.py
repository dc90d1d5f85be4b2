"""What one broker lets its clients hold: connections, and publishes awaiting their receipt.

Every bound has Pulsar's name and a default far above what starquake's own workloads use,
so only a client that misbehaves meets it. Sizes inside a request (ack sets, batch sizes,
bundle counts) are bounded where they are read, by what the broker knows to exist.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

DEFAULT_MAX_CONNECTIONS = 4096
DEFAULT_MAX_CONNECTIONS_PER_IP = 1024
DEFAULT_MAX_PENDING_PUBLISH_REQUESTS = 1000
"""Pulsar's default `maxPendingPublishRequestsPerConnection`."""
DEFAULT_MAX_UNCONNECTED_PER_IP = 64
DEFAULT_CONNECT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    """Pulsar's `brokerMaxConnections`: open connections at most; 0 for no bound."""
    max_connections_per_ip: int = DEFAULT_MAX_CONNECTIONS_PER_IP
    """Pulsar's `brokerMaxConnectionsPerIp`: open connections from one address at most;
    0 for no bound."""
    max_pending_publish_requests: int = DEFAULT_MAX_PENDING_PUBLISH_REQUESTS
    """Pulsar's `maxPendingPublishRequestsPerConnection`: SENDs of one connection without
    their answer yet; at the bound the broker stops reading from the connection until one
    is answered, so a client that never waits cannot fill the broker's memory."""
    max_unconnected_per_ip: int = DEFAULT_MAX_UNCONNECTED_PER_IP
    """Connections from one address whose CONNECT has not been accepted yet, at most (0
    for no bound): one more closes the oldest of them. Ours, not Pulsar's: a flood of
    silent connections from an address then holds at most this many of its
    `max_connections_per_ip`, and a real client's connection, which CONNECTs at once,
    still gets in."""
    connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S
    """A connection whose CONNECT has not been accepted this long after it opened is
    closed (ours: Pulsar's only bound is keep-alive, which a client answering PINGs
    passes)."""

    def refusal(self, open_total: int, open_from_address: int) -> str | None:
        """Why one more connection may not be opened, or None when it may."""
        if 0 < self.max_connections <= open_total:
            return f"the broker has {open_total} connections (brokerMaxConnections)"
        if 0 < self.max_connections_per_ip <= open_from_address:
            return (f"the address has {open_from_address} connections "
                    f"(brokerMaxConnectionsPerIp)")
        return None


DEFAULT_LIMITS = ConnectionLimits()


class PendingPublishes:
    """The SENDs of one connection still waiting for their receipt or error."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self.count = 0
        self._room = asyncio.Event()
        self._room.set()

    def track(self, answered: asyncio.Future[None]) -> None:
        self.count += 1
        if self.count >= self._limit:
            self._room.clear()
        answered.add_done_callback(self._answered)

    def _answered(self, _answered: asyncio.Future[None]) -> None:
        self.count -= 1
        if self.count < self._limit:
            self._room.set()

    async def room(self) -> None:
        """Return once the connection may take another SEND."""
        await self._room.wait()
