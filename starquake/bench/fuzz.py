"""`starquake bench fuzz`: a fuzzing campaign against one broker of the reference
implementation. Spoiled and sound frames (starquake/bench/frame_mutations.py) go to the
broker over many connections, some of them with a producer or a consumer in place so that
the spoiled SENDs and ACKs reach the code behind them. Bounded by a frame count and a time.

It reports crashes (the broker process exited), hangs (a fresh connection's PING got no
PONG within 5 s), the growth of the broker's resident memory, what the broker refused
(its SEND_ERROR and ERROR answers by code, and the connections it closed), whether the
official client still works afterwards (produce-and-consume round trips), and whether it
reads every topic the campaign wrote to from its first message to its last, each in a
process of its own so that a client crash is counted rather than suffered. It exits 0
only with no crash, no hang, every round trip done and every topic read.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
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
from wire.pulsar_api_pb2 import BaseCommand, CommandPing, ServerError

CONNECTIONS_AT_ONCE = 8
FRAMES_PER_CONNECTION = 40
CHECK_EVERY = 25
"""Rounds of connections between two liveness checks."""
PING_TIMEOUT = 5.0
ROUND_TRIPS = 100
TOPIC_READ_TIMEOUT_S = 120


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
    refusals: dict[str, int] = field(default_factory=dict)
    """The broker's refusals by kind: `SEND_ERROR MetadataError`, `ERROR ...`, and
    `connection closed` for each connection it closed."""
    topic_reads: dict[str, int | None] = field(default_factory=dict)
    """Per topic the campaign wrote to: the messages the official client read from it,
    or None when the reading process failed (a crash, an error, no end)."""

    @property
    def rss_growth_mib(self) -> float:
        return (self.rss_after_kib - self.rss_before_kib) / 1024

    @property
    def passed(self) -> bool:
        return (not self.crashes and not self.hangs and self.round_trips == ROUND_TRIPS
                and None not in self.topic_reads.values())


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


def read_topic(service_url: str, topic: str) -> int | None:
    """How many messages the official client reads from `topic`, from its first to its
    last, in a process of its own (`starquake.bench.topic_reader`); None when that process
    fails: a crash on what the broker served, an error, no end in time."""
    try:
        done = subprocess.run([sys.executable, "-m", "starquake.bench.topic_reader",
                               service_url, topic], capture_output=True, text=True,
                              timeout=TOPIC_READ_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        return None
    return int(done.stdout.split()[-1])


class _Campaign:
    def __init__(self, service_url: str, seed: int) -> None:
        self._address = _address(service_url)
        self._rng = random.Random(seed)
        self.topics = [f"persistent://public/default/fuzz-{seed}-{n}" for n in range(4)]
        self.frames = 0
        self.connections = 0
        self.refusals: Counter[str] = Counter()

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
                self.refusals["connection closed"] += 1
                sock.close()
                slots[slot] = self._open()
                continue
            self.frames += 1
        time.sleep(0.05)
        for sock, _ in slots:
            self.refusals.update(_drain(sock))
            sock.close()

    def _open(self) -> tuple[socket.socket, FrameFuzzer]:
        """A connection, most with CONNECT and a producer or consumer in place, and the
        fuzzer of its topic."""
        rng = self._rng
        topic = rng.choice(self.topics)
        sock = socket.create_connection(self._address, timeout=5)
        self.connections += 1
        # Without CONNECT, or with a producer or consumer asked for before it: the broker
        # must take nothing but CONNECT and PING from such a connection.
        setup = rng.choice((b"", producer_frame(topic), subscribe_frame(topic, "a"),
                            connect_frame() + producer_frame(topic),
                            connect_frame() + producer_frame(topic),
                            connect_frame() + subscribe_frame(topic, rng.choice("abc"))))
        if setup:
            try:
                sock.sendall(setup)
                sock.settimeout(2)
                sock.recv(65536)  # CONNECTED, and often the answer to what followed it
            except OSError:
                pass
        return sock, FrameFuzzer(rng, topic)


def _drain(sock: socket.socket) -> Counter[str]:
    """Read what the broker sent, so that its writes never back up: the refusals in it,
    and whether it closed the connection."""
    sock.setblocking(False)
    decoder, refusals = FrameDecoder(), Counter[str]()
    try:
        while data := sock.recv(65536):
            for frame in decoder.feed(data):
                refusals.update(_refusal(frame.command))
        refusals["connection closed"] += 1
    except MalformedFrame:
        pass  # the rest of a message this decoder's limit does not take: not a refusal
    except OSError:
        pass  # nothing more yet: the connection is still open
    return refusals


def _refusal(command: BaseCommand) -> list[str]:
    if command.type == BaseCommand.SEND_ERROR:
        return [f"SEND_ERROR {ServerError.Name(command.send_error.error)}"]
    if command.type == BaseCommand.ERROR:
        return [f"ERROR {ServerError.Name(command.error.error)}"]
    return []


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
    reads = {topic: None if crashes else read_topic(service_url, topic)
             for topic in campaign.topics}
    return FuzzResult(frames=campaign.frames, connections=campaign.connections,
                      crashes=crashes, hangs=hangs, rss_before_kib=rss_before,
                      rss_after_kib=rss_after, round_trips=trips, seconds=elapsed,
                      refusals=dict(campaign.refusals.most_common()), topic_reads=reads)


def describe(result: FuzzResult) -> list[str]:
    return [
        f"{result.frames:,} frames over {result.connections:,} connections in "
        f"{result.seconds:.0f} s",
        f"crashes {result.crashes}, hangs {result.hangs}",
        f"broker RSS {result.rss_before_kib / 1024:.0f} MiB before, "
        f"{result.rss_after_kib / 1024:.0f} MiB after ({result.rss_growth_mib:+.0f} MiB)",
        f"official client afterwards: {result.round_trips}/{ROUND_TRIPS} round trips",
        "refused: " + (", ".join(f"{kind} {count:,}" for kind, count in result.refusals.items())
                       or "nothing"),
        *(f"official client read {topic}: "
          + ("FAILED (crashed, erred or never ended)" if count is None else f"{count:,} messages")
          for topic, count in result.topic_reads.items()),
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
