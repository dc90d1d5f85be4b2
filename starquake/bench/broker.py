"""`starquake bench broker`: one broker of the reference implementation, the official
client, 1 KiB messages at a fixed rate; acknowledged produce-and-consume throughput and
end-to-end latency percentiles.

End to end means: from the moment the producer hands a message to the client to the moment
the consumer receives it, both in this process (one clock). Throughput counts messages that
were both acknowledged to the producer and received and acknowledged by the consumer. The
target is 10,000 messages/s on a 2-core machine, stated as a ratio.
"""

from __future__ import annotations

import shutil
import statistics
import struct
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import click

from harness.targets.local.cluster import ClusterSettings, LocalCluster

TARGET_MESSAGES_PER_SECOND = 10_000
_STAMP = struct.Struct(">Qd")  # sequence number, send time (perf_counter)


@dataclass(frozen=True)
class BrokerBenchResult:
    rate: int
    sent: int
    acknowledged: int
    consumed: int
    seconds: float
    p50_ms: float
    p99_ms: float

    @property
    def throughput(self) -> float:
        return min(self.acknowledged, self.consumed) / self.seconds


def run_broker_bench(service_url: str, *, rate: int, seconds: float, size: int,
                     topic: str) -> BrokerBenchResult:
    """Produce `rate` messages/s for `seconds` while consuming them; bounded in time."""
    import pulsar

    client = pulsar.Client(service_url, operation_timeout_seconds=30,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    total = int(rate * seconds)
    latencies: list[float] = []
    acked = 0
    lock = threading.Lock()
    consumed_all = threading.Event()
    try:
        consumer = client.subscribe(topic, "bench", receiver_queue_size=5000)
        producer = client.create_producer(topic, batching_enabled=True,
                                          batching_max_publish_delay_ms=5,
                                          max_pending_messages=20_000, block_if_queue_full=True)
        padding = b"x" * max(0, size - _STAMP.size)

        def consume() -> None:
            seen: set[int] = set()
            deadline = time.monotonic() + seconds + 60
            while len(seen) < total and time.monotonic() < deadline:
                try:
                    message = consumer.receive(timeout_millis=1000)
                except pulsar.Timeout:
                    continue
                now = time.perf_counter()
                sequence, sent_at = _STAMP.unpack_from(message.data())
                if sequence not in seen:
                    seen.add(sequence)
                    latencies.append(now - sent_at)
                consumer.acknowledge(message)
            consumed_all.set()

        def on_ack(result: pulsar.Result, _message_id: object) -> None:
            nonlocal acked
            if result == pulsar.Result.Ok:
                with lock:
                    acked += 1

        reader = threading.Thread(target=consume, name="bench-consumer", daemon=True)
        reader.start()
        start = time.perf_counter()
        for n in range(total):
            due = start + n / rate
            if (wait := due - time.perf_counter()) > 0:
                time.sleep(wait)
            producer.send_async(_STAMP.pack(n, time.perf_counter()) + padding, on_ack)
        producer.flush()
        consumed_all.wait(seconds + 60)
        elapsed = time.perf_counter() - start
        ordered = sorted(latencies) or [float("nan")]
        return BrokerBenchResult(
            rate=rate, sent=total, acknowledged=acked, consumed=len(latencies), seconds=elapsed,
            p50_ms=1000 * statistics.median(ordered),
            p99_ms=1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))])
    finally:
        client.close()


@click.command()
@click.option("--rate", default=12_000, show_default=True, help="Messages per second offered.")
@click.option("--seconds", default=20.0, show_default=True, help="How long to offer them.")
@click.option("--size", default=1024, show_default=True, help="Message size in bytes.")
@click.option("--service-url", default=None,
              help="Benchmark this broker instead of starting one (one broker, one bookie).")
def bench_broker(rate: int, seconds: float, size: int, service_url: str | None) -> None:
    """Throughput and latency of one broker with the official client."""
    topic = f"persistent://public/default/bench-{int(time.time())}"
    if service_url is not None:
        result = run_broker_bench(service_url, rate=rate, seconds=seconds, size=size, topic=topic)
    else:
        base = Path(tempfile.mkdtemp(prefix="starquake-bench-broker-"))
        try:
            with LocalCluster(base, ClusterSettings(brokers=1, bookies=1)) as cluster:
                result = run_broker_bench(cluster.service_urls[0], rate=rate, seconds=seconds,
                                          size=size, topic=topic)
        finally:
            shutil.rmtree(base, ignore_errors=True)
    click.echo(f"offered {result.rate:,} msg/s of {size} B for {seconds:.0f} s: "
               f"sent {result.sent:,}, acknowledged {result.acknowledged:,}, "
               f"consumed {result.consumed:,} in {result.seconds:.1f} s")
    click.echo(f"throughput {result.throughput:,.0f} msg/s "
               f"({result.throughput / TARGET_MESSAGES_PER_SECOND:.2f}x the "
               f"{TARGET_MESSAGES_PER_SECOND:,} msg/s target); "
               f"end-to-end latency p50 {result.p50_ms:.1f} ms, p99 {result.p99_ms:.1f} ms")
