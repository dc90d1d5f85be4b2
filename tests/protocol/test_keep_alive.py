"""The client side of Pulsar's keep-alive (`wire/keep_alive.py`), against a
scripted broker on loopback: a peer that answers pings keeps the connection, one that has
gone silent (what a WAN cut that drops packets looks like) loses it within two intervals.
The broker side is tested in tests/broker/test_protocol_edges.py."""

from __future__ import annotations

import asyncio

from tests.protocol.scripted_broker import ScriptedBroker, connect
from wire.connection import ConnectionPool
from wire.keep_alive import KEEPALIVE_S
from wire.pulsar_api_pb2 import BaseCommand

INTERVAL = 0.1


def test_a_peer_that_answers_pings_keeps_the_connection() -> None:
    async def scenario() -> None:
        broker = ScriptedBroker()
        connection, server = await connect(broker, keepalive=INTERVAL)
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
        connection, server = await connect(broker, keepalive=INTERVAL)
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
        connection, server = await connect(broker, keepalive=None)
        await asyncio.sleep(5 * INTERVAL)
        assert not connection.closed and broker.pings == 0
        connection.close()
        server.close()

    asyncio.run(scenario())


def test_a_pool_keeps_its_connections_alive_as_pulsars_clients_do() -> None:
    """The harness's scalable-topics client makes its pools with the default: a consumer
    that only waits for messages must still find out that its broker vanished."""
    assert ConnectionPool(["pulsar://127.0.0.1:6650"]).keepalive == KEEPALIVE_S

    async def scenario() -> None:
        broker = ScriptedBroker()
        broker.answering = False
        server = await asyncio.start_server(broker.serve, "127.0.0.1", 0)
        url = f"pulsar://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        pool = ConnectionPool([url], keepalive=INTERVAL)
        first = await pool.connection(url)
        async with asyncio.timeout(10 * INTERVAL):
            while not first.closed:
                await asyncio.sleep(INTERVAL / 2)
        second = await pool.connection(url)  # the next request opens a fresh one
        assert second is not first and not second.closed
        pool.close()
        server.close()

    asyncio.run(scenario())
