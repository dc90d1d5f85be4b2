"""The client side of Pulsar's keep-alive (`wire/keep_alive.py`), against a
scripted broker on loopback: a peer that answers pings keeps the connection, one that has
gone silent (what a WAN cut that drops packets looks like) loses it within two intervals.
The broker side is tested in tests/broker/test_protocol_edges.py."""

from __future__ import annotations

import asyncio

import pytest

from tests.protocol.scripted_broker import ScriptedBroker, connect
from wire import keep_alive as keep_alive_module
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


class _Clock:
    """Time that passes only as the keep-alive sleeps, each sleep overshooting by `drift`
    as a busy event loop's does."""

    def __init__(self, drift: float) -> None:
        self.now = 0.0
        self.drift = drift

    async def sleep(self, seconds: float) -> None:
        self.now += seconds + self.drift
        await _REAL_SLEEP(0)


class _ClockedSilence(keep_alive_module.Silence):
    def __init__(self, clock: _Clock) -> None:
        self._clock = clock
        self.last_heard = clock.now

    def heard(self) -> None:
        self.last_heard = self._clock.now

    def seconds(self) -> float:
        return self._clock.now - self.last_heard


_REAL_SLEEP = asyncio.sleep


def test_a_peer_heard_just_after_a_check_is_pinged_before_it_is_given_up(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Checked once an interval, a peer heard 3% of an interval after the start (its
    CONNECT), with each sleep 2% late, was not yet silent enough for a ping at the first
    check and past two intervals at the second: given up, never pinged. The broker closed
    live connections so, on a busy machine and in CI."""
    interval = 1.0
    clock = _Clock(drift=0.02 * interval)
    monkeypatch.setattr(keep_alive_module.asyncio, "sleep", clock.sleep)
    silence = _ClockedSilence(clock)
    pings: list[float] = []
    given_up: list[float] = []

    def answer_ping() -> None:
        pings.append(clock.now)
        clock.now += 0.1 * interval  # the peer's PONG comes back a little later
        silence.heard()

    async def scenario() -> None:
        clock.now = 0.03 * interval
        silence.heard()  # the CONNECT
        clock.now = 0.0
        task = asyncio.ensure_future(keep_alive_module.keep_alive(
            interval, silence, answer_ping, given_up.append))
        while clock.now < 20 * interval and not task.done():
            await _REAL_SLEEP(0)
        task.cancel()

    asyncio.run(scenario())
    assert given_up == [] and len(pings) >= 5


def test_a_ping_unanswered_for_an_interval_gives_the_peer_up(
        monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock(drift=0.0)
    monkeypatch.setattr(keep_alive_module.asyncio, "sleep", clock.sleep)
    silence = _ClockedSilence(clock)
    pings: list[float] = []
    given_up: list[float] = []

    async def scenario() -> None:
        await keep_alive_module.keep_alive(1.0, silence, lambda: pings.append(clock.now),
                                           given_up.append)

    asyncio.run(scenario())
    assert pings == [1.0] and given_up == [2.0]
