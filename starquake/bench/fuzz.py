"""`starquake bench fuzz`: a fuzzing campaign against one broker of the reference
implementation. Spoiled and sound frames (starquake/bench/frame_mutations.py) go to the
broker over many connections, some of them with a producer or a consumer in place so that
the spoiled SENDs and ACKs reach the code behind them. Bounded by a frame count and a time.

It reports crashes (the broker process exited), hangs (a fresh connection's PING got no
PONG within 5 s), the growth of the broker's resident memory, and whether the official
client still works afterwards (produce-and-consume round trips). It exits 0 only with no
crash, no hang and every round trip done.
"""

from __future__ import annotations

import random
import shutil
import socket
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import click

from starquake.bench.frame_mutations import (
    FrameFuzzer,
    connect_frame,
    producer_frame,
    subscribe_frame,
)
from wire.frames import FrameDecoder, MalformedFrame, encode_command
from wire.pulsar_api_pb2 import BaseCommand, CommandPing

CONNECTIONS_AT_ONCE = 8
FRAMES_PER_CONNECTION = 40
CHECK_EVERY = 25
"""Rounds of connections between two liveness checks."""
PING_TIMEOUT = 5.0
ROUND_TRIPS = 100


@dataclass(frozen=True)
class FuzzResult:
    frames: int
    connections: int
    crashes: int
    hangs: int
    rss_before_kib: int
    rss_after_kib: int
    round_trips: int
    seconds: float

    @property
    def rss_growth_mib(self) -> float:
        return (self.rss_after_kib - self.rss_before_kib) / 1024

    @property
    def passed(self) -> bool:
        return not self.crashes and not self.hangs and self.round_trips == ROUND_TRIPS


def rss_kib(pid: int | None) -> int:
    """Resident memory of a process in KiB (0 when it is gone)."""
    if pid is None:
        return 0
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    return next((int(line.split()[1]) for line in status.splitlines()
                 if line.startswith("VmRSS:")), 0)


def _address(service_url: str) -> tuple[str, int]:
    parts = urlsplit(service_url)
    return parts.hostname or "127.0.0.1", parts.port or 6650


def answers_ping(service_url: str, timeout: float = PING_TIMEOUT) -> bool:
    """Whether the broker answers a new connection's CONNECT and PING in time."""
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection(_address(service_url), timeout=timeout) as sock:
            sock.sendall(connect_frame() + encode_command(
                BaseCommand(type=BaseCommand.PING, ping=CommandPing())))
            decoder = FrameDecoder()
            while (left := deadline - time.monotonic()) > 0:
                sock.settimeout(left)
                data = sock.recv(65536)
                if not data:
                    return False
                if any(f.command.type == BaseCommand.PONG for f in decoder.feed(data)):
                    return True
    except (OSError, MalformedFrame):
        return False
    return False


def client_round_trips(service_url: str, topic: str, count: int = ROUND_TRIPS) -> int:
    """Messages the official client sends and then receives back, one at a time."""
    import pulsar

    client = pulsar.Client(service_url, operation_timeout_seconds=15,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    done = 0
    try:
        consumer = client.subscribe(topic, "round-trips")
        producer = client.create_producer(topic)
        for n in range(count):
            producer.send(f"{n}".encode())
            message = consumer.receive(timeout_millis=10_000)
            consumer.acknowledge(message)
            done += message.data() == f"{n}".encode()
    except Exception:  # the client's failure is the figure, not the command's
        pass
    finally:
        client.close()
    return done


class _Campaign:
    def __init__(self, service_url: str, seed: int) -> None:
        self._address = _address(service_url)
        self._rng = random.Random(seed)
        self._topics = [f"persistent://public/default/fuzz-{seed}-{n}" for n in range(4)]
        self.frames = 0
        self.connections = 0

    def round(self, frame_budget: int) -> None:
        """CONNECTIONS_AT_ONCE connections open at once, each sent FRAMES_PER_CONNECTION
        frames; one the broker closes is replaced by a new one."""
        rng = self._rng
        slots = [self._open() for _ in range(CONNECTIONS_AT_ONCE)]
        budget = min(frame_budget, CONNECTIONS_AT_ONCE * FRAMES_PER_CONNECTION)
        for n in range(budget):
            slot = n % CONNECTIONS_AT_ONCE
            sock, fuzzer = slots[slot]
            frame = fuzzer.spoiled() if rng.random() < 0.8 else fuzzer.sound()
            try:
                sock.sendall(frame)
            except OSError:  # the broker closed it, as it should after a bad frame
                sock.close()
                slots[slot] = self._open()
                continue
            self.frames += 1
        time.sleep(0.05)
        for sock, _ in slots:
            _drain(sock)
            sock.close()

    def _open(self) -> tuple[socket.socket, FrameFuzzer]:
        """A connection, most with CONNECT and a producer or consumer in place, and the
        fuzzer of its topic."""
        rng = self._rng
        topic = rng.choice(self._topics)
        sock = socket.create_connection(self._address, timeout=5)
        self.connections += 1
        setup = rng.choice((b"", connect_frame() + producer_frame(topic),
                            connect_frame() + subscribe_frame(topic, rng.choice("abc"))))
        if setup:
            try:
                sock.sendall(setup)
                sock.settimeout(2)
                sock.recv(65536)  # CONNECTED, and often the answer to what followed it
            except OSError:
                pass
        return sock, FrameFuzzer(rng, topic)


def _drain(sock: socket.socket) -> None:
    """Read what the broker sent, so that its writes never back up."""
    sock.setblocking(False)
    try:
        while sock.recv(65536):
            pass
    except OSError:
        pass


def run_fuzz(service_url: str, broker_pid: Callable[[], int | None], *, frames: int,
             seconds: float, seed: int) -> FuzzResult:
    """The campaign: bounded by `frames` written and by `seconds`."""
    campaign = _Campaign(service_url, seed)
    crashes = hangs = 0
    started = time.monotonic()
    rss_before = rss_kib(broker_pid())
    rounds = 0
    while campaign.frames < frames and time.monotonic() - started < seconds:
        try:
            campaign.round(frames - campaign.frames)
        except OSError:  # no new connection: the broker is gone or stuck
            if broker_pid() is None:
                crashes += 1
                break
            hangs += not answers_ping(service_url)
        rounds += 1
        if rounds % CHECK_EVERY == 0:
            if broker_pid() is None:
                crashes += 1
                break
            hangs += not answers_ping(service_url)
    elapsed = time.monotonic() - started
    if broker_pid() is None:
        crashes = max(crashes, 1)
    elif not answers_ping(service_url):
        hangs += 1
    rss_after = rss_kib(broker_pid())
    trips = 0 if crashes else client_round_trips(
        service_url, f"persistent://public/default/fuzz-{seed}-after")
    return FuzzResult(frames=campaign.frames, connections=campaign.connections,
                      crashes=crashes, hangs=hangs, rss_before_kib=rss_before,
                      rss_after_kib=rss_after, round_trips=trips, seconds=elapsed)


def describe(result: FuzzResult) -> list[str]:
    return [
        f"{result.frames:,} frames over {result.connections:,} connections in "
        f"{result.seconds:.0f} s",
        f"crashes {result.crashes}, hangs {result.hangs}",
        f"broker RSS {result.rss_before_kib / 1024:.0f} MiB before, "
        f"{result.rss_after_kib / 1024:.0f} MiB after ({result.rss_growth_mib:+.0f} MiB)",
        f"official client afterwards: {result.round_trips}/{ROUND_TRIPS} round trips",
    ]


@click.command()
@click.option("--frames", default=100_000, show_default=True, type=click.IntRange(1),
              help="Stop after writing this many frames.")
@click.option("--seconds", default=900.0, show_default=True, type=click.FloatRange(1),
              help="Stop after this long, whatever the count.")
@click.option("--seed", default=1, show_default=True, help="Repeats a campaign.")
def bench_fuzz(frames: int, seconds: float, seed: int) -> int:
    """Fuzz one broker (started here, with a bookie and ZooKeeper) with spoiled frames."""
    from harness.targets.local.cluster import ClusterSettings, LocalCluster

    base = Path(tempfile.mkdtemp(prefix="starquake-bench-fuzz-"))
    try:
        with LocalCluster(base, ClusterSettings(brokers=1, bookies=1)) as cluster:
            broker = cluster.brokers[0]
            result = run_fuzz(broker.service_url, lambda: broker.pid, frames=frames,
                              seconds=seconds, seed=seed)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    for line in describe(result):
        click.echo(line)
    return 0 if result.passed else 1
