"""The client side of Pulsar's keep-alive (`wire/keep_alive.py`), against a
scripted broker on loopback: a peer that answers pings keeps the connection, one that has
gone silent (what a WAN cut that drops packets looks like) loses it within two intervals.
The broker side is tested in tests/broker/test_protocol_edges.py."""

from __future__ import annotations

import asyncio

from impl.broker import commands
from wire.connection import ClientConnection
from wire.frames import FrameDecoder, encode_command
from wire.keep_alive import pong
from wire.pulsar_api_pb2 import BaseCommand

INTERVAL = 0.1


class ScriptedBroker:
    """Answers CONNECT; then answers PINGs only while `answering`, and counts them."""

    def __init__(self) -> None:
        self.answering = True
        self.pings = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        decoder = FrameDecoder()
        while data := await reader.read(65536):
            for frame in decoder.feed(data):
                if frame.command.type == BaseCommand.CONNECT:
                    writer.write(encode_command(commands.connected(19)))
                elif frame.command.type == BaseCommand.PING:
                    self.pings += 1
                    if self.answering:
                        writer.write(encode_command(pong()))
        writer.close()


async def _connect(broker: ScriptedBroker, keepalive: float | None = INTERVAL
                   ) -> tuple[ClientConnection, asyncio.Server]:
    server = await asyncio.start_server(broker.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    connection = await ClientConnection.open(f"pulsar://127.0.0.1:{port}",
                                             keepalive=keepalive)
    return connection, server


def test_a_peer_that_answers_pings_keeps_the_connection() -> None:
    async def scenario() -> None:
        broker = ScriptedBroker()
        connection, server = await _connect(broker)
        await asyncio.sleep(10 * INTERVAL)
        assert not connection.closed
        assert broker.pings >= 3  # pinged in each silent interval, answered each time
        connection.close()
        server.close()

    asyncio.run(scenario())


def test_a_silent_peer_is_given_up_after_two_intervals() -> None:
    async def scenario() -> None:
        broker = ScriptedBroker()
        broker.answering = False
        connection, server = await _connect(broker)
        lost = asyncio.get_running_loop().create_future()
        connection.register((BaseCommand.SEND_RECEIPT,), 1, lambda _f: None,
                            lambda: lost.set_result(True))
        async with asyncio.timeout(10 * INTERVAL):
            await lost  # owners hear of it, as a replicator's producer does
        assert connection.closed
        assert broker.pings >= 1
        server.close()

    asyncio.run(scenario())


def test_without_keepalive_a_silent_peer_is_not_pinged() -> None:
    async def scenario() -> None:
        broker = ScriptedBroker()
        connection, server = await _connect(broker, keepalive=None)
        await asyncio.sleep(5 * INTERVAL)
        assert not connection.closed and broker.pings == 0
        connection.close()
        server.close()

    asyncio.run(scenario())
