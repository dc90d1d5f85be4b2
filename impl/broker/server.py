"""The binary-protocol listener: accepts connections, serves each on its own, and closes
them all on shutdown. A connection's failure never reaches another. Beyond the
connection limits (impl/broker/limits.py) a new connection is closed as it is accepted;
past the bound on silent connections from its address, the oldest of those is closed
instead."""

from __future__ import annotations

import asyncio
import logging

from impl.broker.connection import ServerConnection
from impl.broker.limits import DEFAULT_LIMITS, ConnectionLimits
from impl.broker.service import BrokerService
from impl.security.guard import OPEN_GUARD, Guard
from wire.keep_alive import KEEPALIVE_S

log = logging.getLogger(__name__)


class BinaryServer:
    def __init__(self, service: BrokerService, keepalive: float = KEEPALIVE_S,
                 guard: Guard = OPEN_GUARD, limits: ConnectionLimits = DEFAULT_LIMITS) -> None:
        self._service = service
        self._keepalive = keepalive
        self._guard = guard
        self._limits = limits
        self._server: asyncio.Server | None = None
        self._connections: dict[ServerConnection, str] = {}
        """Each open connection and the address it came from, oldest first."""

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self, host: str, port: int) -> None:
        self._server = await asyncio.start_server(
            self._serve, host, port, ssl=self._guard.config.server_ssl_context())
        log.info("binary protocol listening on %s:%d%s", host, self.port,
                 " (TLS)" if self._guard.config.tls else "")

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host = str((writer.get_extra_info("peername") or ("?",))[0])
        from_host = [c for c, address in self._connections.items() if address == host]
        self._make_room_for_speakers(from_host)
        refusal = self._limits.refusal(len(self._connections), len(from_host))
        if refusal is not None:
            log.warning("refused a connection from %s: %s", host, refusal)
            writer.close()
            return
        connection = ServerConnection(reader, writer, self._service, self._keepalive,
                                      self._guard, self._limits.max_pending_publish_requests,
                                      self._limits.connect_timeout_s)
        self._connections[connection] = host
        try:
            await connection.serve()
        except Exception:
            log.exception("connection from %s failed", connection.address)
            connection.close()
        finally:
            self._connections.pop(connection, None)

    def _make_room_for_speakers(self, from_host: list[ServerConnection]) -> None:
        """At `max_unconnected_per_ip` connections of `from_host` (one address's, oldest
        first) without an accepted CONNECT, close the oldest: the new one may be a client
        that speaks."""
        silent = [c for c in from_host if not c.connected and not c.closed]
        if 0 < self._limits.max_unconnected_per_ip <= len(silent):
            log.warning("closing connection from %s: the oldest of %d from its address "
                        "without an accepted CONNECT", silent[0].address, len(silent))
            silent[0].close()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for connection in list(self._connections):
            connection.close()
        if self._server is not None:
            await self._server.wait_closed()
