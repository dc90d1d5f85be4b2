"""The client side of Pulsar's keep-alive (`wire/keep_alive.py`), against a
scripted broker on loopback: a peer that answers pings keeps the connection, one that has
gone silent (what a WAN cut that drops packets looks like) loses it within two intervals.
The broker side is tested in tests/broker/test_protocol_edges.py."""

from __future__ import annotations

import asyncio

from tests.protocol.scripted_broker import ScriptedBroker, connect
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
