"""`starquake serve`: one cluster of the reference implementation on this machine, for
exploring by hand, and for `starquake conform` to validate like a third party's system:
with `--target-file` it writes a target file whose shell hooks kill, pause, resume and
start its nodes (harness/targets/local/served_control.py).

A node that dies is noticed within a second. Without `--target-file` nothing is meant to
stop a node, so `serve` stops the cluster and exits 4 naming it; with one, a hook may
have killed it on purpose, so `serve` says so in one line and goes on serving.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import click

from harness.foreground import stop_on_signal
from harness.target import Node, Role, TargetCluster
from harness.targets.external.describe import target_file_text
from harness.targets.local.cluster import HOST, ClusterSettings, LocalCluster
from harness.targets.local.cluster import Node as LocalNode
from harness.targets.local.served_control import ServedControl
from harness.topology import node_name
from starquake.node_deaths import NodeDeaths, NodeDied


@click.command()
@click.option("--brokers", default=3, show_default=True, type=click.IntRange(1, 16))
@click.option("--bookies", default=1, show_default=True, type=click.IntRange(1, 8))
@click.option("--zookeepers", type=click.Choice(["1", "3"]), default="1", show_default=True)
@click.option("--cluster", "name", default="standalone", show_default=True,
              help="The cluster's name (brokers register it; namespaces replicate to it).")
@click.option("--dir", "directory", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="Where every node keeps data and logs (kept afterwards). "
              "Default: a temporary directory, removed on exit.")
@click.option("--session-expired-policy", type=click.Choice(["shutdown", "reconnect"]),
              default="reconnect", show_default=True,
              help="PIP-57's zookeeperSessionExpiredPolicy for every broker.")
@click.option("--session-timeout-ms", default=4000, show_default=True,
              type=click.IntRange(1000, 60_000), help="The brokers' ZooKeeper session timeout.")
@click.option("--mutants", default="", help="Comma-separated mutant switches (docs/mutants.md).")
@click.option("--service-port", type=click.IntRange(0, 65535), default=0,
              help="The first broker's binary protocol port, the others' counting up from "
                   "it (with --admin-port) [free ports].")
@click.option("--admin-port", type=click.IntRange(0, 65535), default=0,
              help="The first broker's admin port, the others' counting up from it.")
@click.option("--bind-host", default="127.0.0.1", show_default=True,
              help="The address brokers listen on: loopback, so nothing off this machine "
                   "reaches them (docs/security.md); they still advertise 127.0.0.1.")
@click.option("--target-file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write a target file for `starquake conform` here, once serving.")
def serve(brokers: int, bookies: int, zookeepers: str, name: str, directory: Path | None,
          session_expired_policy: str, session_timeout_ms: int, mutants: str,
          service_port: int, admin_port: int, bind_host: str,
          target_file: Path | None) -> None:
    """Start ZooKeeper, bookies and brokers; print each broker's URLs; stop on Ctrl-C."""
    if bool(service_port) != bool(admin_port):
        raise click.UsageError("give both --service-port and --admin-port, or neither")
    settings = ClusterSettings(
        name=name, brokers=brokers, bookies=bookies, zookeepers=int(zookeepers),
        session_timeout_ms=session_timeout_ms, session_expired_policy=session_expired_policy,
        mutants=tuple(m.strip() for m in mutants.split(",") if m.strip()),
        first_broker_ports=(service_port, admin_port) if service_port else None,
        broker_args=("--bind-host", bind_host))
    base = directory or Path(tempfile.mkdtemp(prefix="starquake-serve-"))
    with stop_on_signal() as requested:
        cluster = LocalCluster(base, settings)
        try:
            cluster.start()
            click.echo(f"cluster {name} serving, files in {base}")
            click.echo(f"zookeeper: {cluster.zookeeper.connect_string}")
            for bookie in cluster.bookies:
                click.echo(f"bookie {bookie.index}: {bookie.address} (pid {bookie.pid})")
            for broker in cluster.brokers:
                click.echo(f"broker {broker.index}: service URL {broker.service_url} "
                           f"admin URL {broker.admin_url} (pid {broker.pid})")
            control = ServedControl(base / "control", _named_nodes(cluster))
            deaths = NodeDeaths(_named_nodes(cluster))
            if target_file is not None:
                target_file.write_text(_target_file(cluster, control))
                click.echo(f"target file: {target_file}")
            click.echo("press Ctrl-C to stop", err=True)
            while not requested.wait(0.5):
                control.serve_requests()
                for dead, code in deaths.new():
                    if target_file is None:
                        raise NodeDied(dead, code)
                    click.echo(f"node {dead} died (exit code {code}); a start hook brings "
                               f"it back", err=True)
            click.echo("stopping", err=True)
        finally:
            cluster.stop()
            if directory is None:
                shutil.rmtree(base, ignore_errors=True)
    click.echo("stopped")


def _roles(cluster: LocalCluster) -> tuple[tuple[Role, list[LocalNode]], ...]:
    return (("bookie", list(cluster.bookies)), ("broker", list(cluster.brokers)))


def _named_nodes(cluster: LocalCluster) -> dict[str, LocalNode]:
    """Bookies and brokers under the names our deployments give them."""
    return {node_name(cluster.settings.name, role, n): node
            for role, nodes in _roles(cluster) for n, node in enumerate(nodes, start=1)}


def _target_file(cluster: LocalCluster, control: ServedControl) -> str:
    name = cluster.settings.name
    nodes = tuple(Node(node_name(name, role, n), role, name, HOST)
                  for role, members in _roles(cluster) for n in range(1, len(members) + 1))
    described = TargetCluster(name, tuple(cluster.service_urls), tuple(cluster.admin_urls),
                              cluster.zookeeper.connect_string, nodes)
    return target_file_text(
        f"serve-{name}", [described], cluster.settings.session_timeout_ms / 1000,
        {node.name: {"control": "hooks"} for node in nodes},
        header="Written by `starquake serve`: its nodes, killed, paused, resumed and started\n"
               "through its control directory by shell hooks. Local processes share the\n"
               "loopback interface, so they cannot be partitioned.",
        hooks=control.hooks())
