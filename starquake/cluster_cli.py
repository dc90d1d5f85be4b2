"""`starquake cluster ...`: clusters in containers, for exploring by hand and for cleaning up.

`up` starts a deployment and returns, leaving it running: a user exploring wants a shell
back, and `down RUN_ID` (or `down --all`) removes it. A Ctrl-C or SIGTERM while it is
starting removes what was started.
"""

from __future__ import annotations

import dataclasses
import string
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import click

if TYPE_CHECKING:
    from harness.target import LookupEndpoint
    from harness.targets.docker.deployment import DockerDeployment
    from harness.targets.docker.described import DescribedPromises
    from harness.topology import Topology

# harness.targets.docker.images.IMAGE_SOURCES, spelled out so that `starquake --help` does
# not import the docker SDK (a unit test keeps the two equal).
IMAGE_SOURCES = ("auto", "import", "dockerfile")


@click.group()
def cluster() -> None:
    """Clusters in containers (Docker): start, list, remove."""


@cluster.command()
@click.argument("scenario", required=False,
                type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--clusters", type=click.IntRange(1, 8), default=None,
              help="Number of clusters, named a, b, ... [scenario's, else 1]")
@click.option("--zookeepers", type=click.Choice(["1", "3"]), default=None,
              help="ZooKeeper nodes per cluster [scenario's, else 1]")
@click.option("--bookies", type=click.IntRange(0, 8), default=None,
              help="Bookies per cluster [scenario's, else 1]")
@click.option("--brokers", type=click.IntRange(0, 16), default=None,
              help="Brokers per cluster [scenario's, else 3]")
@click.option("--session-expired-policy", type=click.Choice(["shutdown", "reconnect"]),
              default=None, help="PIP-57's policy for every broker [scenario's, else reconnect]")
@click.option("--image-source", type=click.Choice(IMAGE_SOURCES), default="auto",
              show_default=True, help="import: no registry needed; dockerfile: pulls a base.")
@click.option("--run-id", default=None, help="Label for the run's containers [time-based].")
@click.option("--lookup", is_flag=True,
              help="Also start our lookup service (tenant migration) as a node of the first "
                   "cluster.")
@click.option("--target-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write a target file for `starquake conform` here: the nodes by container "
                   "name.")
def up(scenario: Path | None, clusters: int | None, zookeepers: str | None,
       bookies: int | None, brokers: int | None, session_expired_policy: str | None,
       image_source: str, run_id: str | None, lookup: bool, target_file: Path | None) -> None:
    """Start the clusters of SCENARIO's [topology] (or of the options), print every
    node's addresses, and leave them running."""
    from harness.signals import sigterm_interrupts
    from harness.topology import Topology
    from scenarios.format import load_scenario

    topology, mutants = Topology(), tuple[str, ...]()
    if scenario is not None:
        loaded = load_scenario(scenario)
        topology, mutants = loaded.topology, loaded.mutants
    overrides: dict[str, Any] = {
        "clusters": tuple(string.ascii_lowercase[:clusters]) if clusters else None,
        "zookeepers": int(zookeepers) if zookeepers else None,
        "bookies": bookies, "brokers": brokers,
        "session_expired_policy": session_expired_policy}
    topology = dataclasses.replace(
        topology, **{key: value for key, value in overrides.items() if value is not None})
    deployment, system, promises = _deployment(topology, mutants, scenario, lookup,
                                               run_id, image_source)
    started = time.monotonic()
    with sigterm_interrupts():
        deployment.up()
        try:
            endpoint = _start_lookup(deployment) if lookup else None
        except BaseException:
            deployment.down()
            raise
    elapsed = time.monotonic() - started
    click.echo(f"run {deployment.run_id}: {len(deployment.nodes)} nodes serving after "
               f"{elapsed:.1f} s (image {deployment.image.tag if deployment.image else '?'})")
    click.echo(f"{'node':<16} {'role':<10} {'address':<16} {'wan':<16} ports")
    for node in deployment.nodes:
        wan = node.ips[1] if len(node.ips) > 1 else "-"
        ports = " ".join(f"{k}={v}" for k, v in (node.spec.ports if node.spec else {}).items())
        click.echo(f"{node.name:<16} {node.role:<10} {node.ip:<16} {wan:<16} {ports}")
    for nodes in deployment.clusters.values():
        # Our brokers keep each cluster under a chroot of its own; Pulsar's use the root.
        chroot = (f" (bookies and brokers use {nodes.metadata_url})"
                  if system == "reference" else "")
        click.echo(f"cluster {nodes.name}: zookeeper {nodes.zk_connect_string}{chroot}")
        for service, admin in zip(nodes.service_urls, nodes.admin_urls, strict=True):
            click.echo(f"  broker {service}  admin {admin}")
    if endpoint is not None:
        click.echo(f"lookup service {endpoint.service_url}  admin {endpoint.admin_url}")
    if target_file is not None:
        from harness.targets.docker.described import described_deployment

        target_file.write_text(described_deployment(deployment, endpoint, system, promises))
        click.echo(f"target file: {target_file}")
    click.echo(f"remove with: starquake cluster down {deployment.run_id}")


def _deployment(topology: Topology, mutants: tuple[str, ...], scenario: Path | None,
                lookup: bool, run_id: str | None, image_source: str,
                ) -> tuple[DockerDeployment, str, DescribedPromises]:
    """The deployment of the topology's backend, not started, with what its target file
    calls the system and says of it: our implementation's (`docker`) or Apache Pulsar's
    (`apache-pulsar`)."""
    from harness.targets.docker.deployment import DockerDeployment
    from harness.targets.docker.described import reference_promises
    from harness.targets.docker.images import ImageSource
    from harness.targets.docker.node_specs import NodeSettings
    from history.errors import BadInput

    where = f"{scenario}: " if scenario is not None else ""
    source = cast(ImageSource, image_source)
    if topology.backend == "apache-pulsar":
        from harness.targets.apache_pulsar.target import described_promises, pulsar_deployment

        deployment = pulsar_deployment(topology, mutants=mutants, lookup_service=lookup,
                                       run_id=run_id, reaper=False, image_source=source)
        return deployment, "apache-pulsar", described_promises(topology)
    if topology.backend != "docker":
        raise BadInput(f"{where}topology.backend is {topology.backend!r}; "
                       "`starquake serve` runs a local cluster")
    deployment = DockerDeployment(topology, settings=NodeSettings(mutants=mutants),
                                  run_id=run_id, image_source=source, reaper=False)
    return deployment, "reference", reference_promises(deployment)


def _start_lookup(deployment: DockerDeployment) -> LookupEndpoint:
    """Our lookup service in a container of the first cluster, its records beside that
    cluster's metadata."""
    from harness.target import LookupEndpoint
    from harness.targets.docker.node_specs import (
        BROKER_ADMIN_PORT,
        BROKER_PORT,
        lookup_spec,
    )
    from harness.targets.lookup import CHROOT

    first = next(iter(deployment.clusters.values()))
    assert deployment.image is not None
    node = deployment.add_node(first.name, f"{first.name}-lookup", "lookup",
                               lookup_spec(deployment.image, first.zk_connect_string + CHROOT))
    return LookupEndpoint(f"pulsar://{node.advertised_ip}:{BROKER_PORT}",
                          f"http://{node.advertised_ip}:{BROKER_ADMIN_PORT}")


@cluster.command()
@click.argument("run_id", required=False)
@click.option("--all", "everything", is_flag=True,
              help="Remove the containers and networks of every run on this engine.")
@click.option("--logs", "logs_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="First save each node's log to DIR/logs/<node>.log.")
def down(run_id: str | None, everything: bool, logs_dir: Path | None) -> None:
    """Remove RUN_ID's containers and networks (their iptables rules go with them)."""
    from harness.targets.docker.engine import connect
    from harness.targets.docker.resources import remove_run, save_logs

    if (run_id is None) == (not everything):
        raise click.UsageError("give either a RUN_ID or --all")
    client = connect()
    if logs_dir is not None:
        if run_id is None:
            raise click.UsageError("--logs needs a RUN_ID")
        for path in save_logs(client, run_id, logs_dir):
            click.echo(f"saved {path}")
    removed = remove_run(client, run_id)
    if not removed.runs:
        click.echo(f"nothing to remove{'' if everything else f' for run {run_id}'}")
        return
    click.echo(f"removed {removed.containers} containers and {removed.networks} networks "
               f"of {', '.join(removed.runs)}")


@cluster.command(name="ls")
def list_runs() -> None:
    """List the runs that have containers or networks on this engine."""
    from harness.targets.docker.engine import connect
    from harness.targets.docker.resources import list_runs as runs_on

    runs = runs_on(connect())
    if not runs:
        click.echo("no starquake containers or networks")
    for run in runs:
        nodes = ", ".join(f"{name} ({status})" for name, status in sorted(run.nodes.items()))
        click.echo(f"{run.run_id}: clusters {', '.join(sorted(run.clusters)) or '-'}; "
                   f"nodes {nodes or '-'}; networks {', '.join(sorted(run.networks)) or '-'}")


@cluster.command()
@click.option("--image-source", type=click.Choice(IMAGE_SOURCES), default="auto",
              show_default=True)
def image(image_source: str) -> None:
    """Build the node image now (runs reuse it while its content is unchanged)."""
    from harness.targets.docker.engine import connect
    from harness.targets.docker.images import ImageSource, node_image

    built = node_image(connect(), cast(ImageSource, image_source))
    click.echo(f"{built.tag} ({built.source})")
