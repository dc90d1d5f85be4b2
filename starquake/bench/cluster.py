"""`starquake bench cluster`: how long a containerised deployment takes to serve.

The target is one ZooKeeper, one bookie and three brokers serving within 20 s of
the command, the image already built; the figure is printed as a ratio to that target.
Every repetition is torn down and checked to have left nothing behind.
"""

from __future__ import annotations

import statistics
import string
import time

import click

TARGET_SECONDS = 20.0


@click.command()
@click.option("--clusters", type=click.IntRange(1, 4), default=1, show_default=True)
@click.option("--zookeepers", type=click.Choice(["1", "3"]), default="1", show_default=True)
@click.option("--bookies", type=click.IntRange(0, 8), default=1, show_default=True)
@click.option("--brokers", type=click.IntRange(0, 16), default=3, show_default=True)
@click.option("--repeat", type=click.IntRange(1, 20), default=3, show_default=True)
def bench_cluster(clusters: int, zookeepers: str, bookies: int, brokers: int,
                  repeat: int) -> None:
    """Time `up` (to every node serving) and `down` of a deployment, REPEAT times."""
    from harness.signals import sigterm_interrupts
    from harness.targets.docker.deployment import DockerDeployment
    from harness.targets.docker.engine import connect
    from harness.targets.docker.images import node_image
    from harness.targets.docker.resources import run_containers, run_networks
    from harness.topology import Topology

    client = connect()
    image = node_image(client)  # built before timing: the target assumes a built image
    topology = Topology(clusters=tuple(string.ascii_lowercase[:clusters]),
                        zookeepers=int(zookeepers), bookies=bookies, brokers=brokers)
    ups, downs = [], []
    with sigterm_interrupts():
        for _ in range(repeat):
            deployment = DockerDeployment(topology, client=client, image_source=image.source)
            started = time.perf_counter()
            with deployment:
                ups.append(time.perf_counter() - started)
                started = time.perf_counter()
            downs.append(time.perf_counter() - started)
            left = run_containers(client, deployment.run_id) + run_networks(client,
                                                                            deployment.run_id)
            if left:
                raise click.ClickException(f"teardown left {[x.name for x in left]}")
    up_median = statistics.median(ups)
    nodes = clusters * (int(zookeepers) + bookies + brokers)
    click.echo(f"{nodes} nodes in {clusters} cluster(s), image {image.tag} ({image.source})")
    click.echo(f"up (all serving): median {up_median:.1f} s, runs "
               f"{', '.join(f'{t:.1f}' for t in ups)}")
    click.echo(f"down: median {statistics.median(downs):.1f} s; nothing left behind")
    click.echo(f"ratio to the {TARGET_SECONDS:.0f} s target: {up_median / TARGET_SECONDS:.2f}")
