"""`starquake bench history`: how many events per second the history writer sustains.

The target is 200,000 events/s. The figure is printed as a ratio to that target
so that runs on machines of different speeds read the same way.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import click

from history.writer import ClientProcess, HistoryWriter, SequentialIds

TARGET_EVENTS_PER_SECOND = 200_000


def write_send_history(path: Path, operations: int) -> int:
    """Record `operations` keyed sends (invoke and ok), as a producer would; returns events."""
    with HistoryWriter(path) as writer:
        client = ClientProcess(writer, SequentialIds("p"))
        ids = SequentialIds("m")
        topic = "persistent://bench/ns/topic"
        for n in range(operations):
            value = ids.fresh()
            client.invoke("send", value=value, key=f"k{n % 64}", topic=topic, cluster="a")
            client.complete("ok", value=value, position=f"1:{n}", topic=topic, cluster="a")
        return writer.events


@click.command()
@click.option("--events", default=1_000_000, show_default=True, help="Events to write.")
def bench_history(events: int) -> None:
    """Time the history writer over EVENTS events of a producer's sends."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "history.jsonl"
        start = time.perf_counter()
        written = write_send_history(path, max(1, events // 2))
        elapsed = time.perf_counter() - start
        size = path.stat().st_size
    rate = written / elapsed
    click.echo(f"events={written} seconds={elapsed:.2f} events_per_s={rate:,.0f} "
               f"bytes_per_event={size / written:.0f}")
    click.echo(f"ratio_to_target={rate / TARGET_EVENTS_PER_SECOND:.2f} "
               f"(target {TARGET_EVENTS_PER_SECOND:,} events/s)")
