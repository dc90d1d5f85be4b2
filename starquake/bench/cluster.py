"""`starquake bench cluster`: how long a containerised deployment takes to serve, and the
memory its containers hold once it does.

The target is one ZooKeeper, one bookie and three brokers serving within 20 s of
the command, the image already built; the figure is printed as a ratio to that target.
With `--target apache-pulsar` the same figures for the real Apache Pulsar, one cluster and
the two of a geo-replication scenario, beside our reference implementation in the same
shapes, in one run. Every repetition is torn down and checked to have left nothing behind.
"""

from __future__ import annotations

import functools
import statistics
import string
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from docker import DockerClient

    from harness.targets.docker.deployment import DockerDeployment
    from harness.targets.docker.images import ImageSource
    from harness.topology import Topology

TARGET_SECONDS = 20.0
PULSAR = "apache-pulsar"
SHAPES = ((1, 3, 3), (2, 2, 2))
"""(clusters, bookies, brokers) of the Pulsar comparison: `scenarios/pulsar/topic-faults`'s
cluster and `geo-failover`'s two, each with one ZooKeeper."""


@dataclass(frozen=True)
class Boot:
    up_s: float
    """From the call to every node serving."""
    down_s: float
    memory_mib: float
    """The run's containers' memory once serving (page cache excluded), summed."""


@click.command()
@click.option("--clusters", type=click.IntRange(1, 4), default=1, show_default=True)
@click.option("--zookeepers", type=click.Choice(["1", "3"]), default="1", show_default=True)
@click.option("--bookies", type=click.IntRange(0, 8), default=1, show_default=True)
@click.option("--brokers", type=click.IntRange(0, 16), default=3, show_default=True)
@click.option("--repeat", type=click.IntRange(1, 20), default=3, show_default=True)
@click.option("--target", type=click.Choice([PULSAR]),
              help="Instead, boot this system's clusters beside our reference "
                   "implementation's in the same shapes: one cluster of 1 ZooKeeper, 3 "
                   "bookies and 3 brokers, and two of 1, 2 and 2 joined for "
                   "geo-replication.")
def bench_cluster(clusters: int, zookeepers: str, bookies: int, brokers: int,
                  repeat: int, target: str | None) -> None:
    """Time `up` (to every node serving) and `down` of a deployment, REPEAT times."""
    from harness.signals import sigterm_interrupts
    from harness.targets.docker.engine import connect
    from harness.targets.docker.images import node_image

    client = connect()
    image = node_image(client)  # built before timing: the target assumes a built image
    click.echo(f"image {image.tag} ({image.source})")
    with sigterm_interrupts():
        if target is None:
            topology = _topology(clusters, int(zookeepers), bookies, brokers)
            boots = _boots(client, functools.partial(_reference, client, topology,
                                                     image.source), repeat)
            click.echo(f"{_nodes(topology)} nodes in {clusters} cluster(s)")
            _print_boots("up (all serving)", boots)
            click.echo(f"ratio to the {TARGET_SECONDS:.0f} s target: "
                       f"{statistics.median(b.up_s for b in boots) / TARGET_SECONDS:.2f}")
            return
        from harness.targets.apache_pulsar.distribution import fetch
        from harness.targets.apache_pulsar.target import pulsar_deployment

        distribution = fetch()
        for count, shape_bookies, shape_brokers in SHAPES:
            topology = _topology(count, 1, shape_bookies, shape_brokers)
            click.echo(f"{count} cluster(s) of 1 ZooKeeper, {shape_bookies} bookies, "
                       f"{shape_brokers} brokers ({_nodes(topology)} nodes):")
            with tempfile.TemporaryDirectory(prefix="starquake-bench-") as run_dir:
                _print_boots("  reference", _boots(
                    client, functools.partial(_reference, client, topology, image.source),
                    repeat))
                _print_boots(f"  Apache Pulsar {distribution.version}", _boots(
                    client, functools.partial(pulsar_deployment, topology, distribution,
                                              run_dir=Path(run_dir),
                                              image_source=image.source), repeat))


def _topology(clusters: int, zookeepers: int, bookies: int, brokers: int) -> Topology:
    from harness.topology import Topology

    return Topology(clusters=tuple(string.ascii_lowercase[:clusters]), zookeepers=zookeepers,
                    bookies=bookies, brokers=brokers)


def _nodes(topology: Topology) -> int:
    return len(topology.clusters) * (topology.zookeepers + topology.bookies + topology.brokers)


def _reference(client: DockerClient, topology: Topology, source: ImageSource
               ) -> DockerDeployment:
    from harness.targets.docker.deployment import DockerDeployment

    return DockerDeployment(topology, client=client, image_source=source)


def _boots(client: DockerClient, make: Callable[[], DockerDeployment],
           repeat: int) -> list[Boot]:
    """Start and stop a new deployment `repeat` times: each one's times and memory."""
    from harness.targets.docker.resources import run_containers, run_networks

    boots = []
    for _ in range(repeat):
        deployment = make()
        started = time.perf_counter()
        with deployment:
            up_s = time.perf_counter() - started
            memory = _memory_mib(client, deployment.run_id)
            started = time.perf_counter()
        down_s = time.perf_counter() - started
        left = run_containers(client, deployment.run_id) + run_networks(client,
                                                                        deployment.run_id)
        if left:
            raise click.ClickException(f"teardown left {[x.name for x in left]}")
        boots.append(Boot(up_s, down_s, memory))
    return boots


def _memory_mib(client: DockerClient, run_id: str) -> float:
    """What the run's containers use now, as `docker stats` shows it (usage less the
    inactive page cache), summed."""
    from harness.targets.docker.resources import run_containers

    total = 0
    for container in run_containers(client, run_id):
        memory = container.stats(stream=False, one_shot=True).get("memory_stats", {})
        total += memory.get("usage", 0) - memory.get("stats", {}).get("inactive_file", 0)
    return total / 2**20


def _print_boots(label: str, boots: list[Boot]) -> None:
    def series(values: list[float], unit: str) -> str:
        return (f"median {statistics.median(values):.1f}{unit} "
                f"({', '.join(f'{v:.1f}' for v in values)})")

    click.echo(f"{label}: up {series([b.up_s for b in boots], ' s')}, down "
               f"{series([b.down_s for b in boots], ' s')}, memory once serving "
               f"{series([b.memory_mib for b in boots], ' MiB')}; nothing left behind")
