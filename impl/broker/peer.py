"""What producers and consumers need of the connection they live on: a way to send
commands, backpressure, and a name for stats and logs. Tests provide their own."""

from __future__ import annotations

from typing import Protocol

from wire.pulsar_api_pb2 import BaseCommand


class Peer(Protocol):
    @property
    def address(self) -> str:
        """`host:port` of the client, for stats and logs."""
        ...

    @property
    def understands_end_of_topic(self) -> bool:
        """Whether the client handles REACHED_END_OF_TOPIC (the C++-based official
        clients, Python's included, close the connection on it as an unknown command)."""
        ...

    def send(self, command: BaseCommand, entry: bytes | None = None) -> None:
        """Queue one frame (never blocks; a closed connection drops it)."""
        ...

    async def drain(self) -> None:
        """Wait until the socket buffer is below its high-water mark."""
        ...

    async def alive(self) -> bool:
        """Whether the client still answers (a PING, within a bound); a connection that
        does not is closed. Pulsar's `checkConnectionLiveness`."""
        ...
