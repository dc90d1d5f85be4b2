"""`starquake serve`: one cluster of the reference implementation on this machine, for
exploring by hand (and, in the conformance suite, validated like a third party's system).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import click

from harness.foreground import stop_on_signal, wait_until
from harness.targets.local.cluster import ClusterSettings, LocalCluster


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
def serve(brokers: int, bookies: int, zookeepers: str, name: str, directory: Path | None,
          session_expired_policy: str, session_timeout_ms: int, mutants: str) -> None:
    """Start ZooKeeper, bookies and brokers; print each broker's URLs; stop on Ctrl-C."""
    settings = ClusterSettings(
        name=name, brokers=brokers, bookies=bookies, zookeepers=int(zookeepers),
        session_timeout_ms=session_timeout_ms, session_expired_policy=session_expired_policy,
        mutants=tuple(m.strip() for m in mutants.split(",") if m.strip()))
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
            click.echo("press Ctrl-C to stop", err=True)
            wait_until(requested)
            click.echo("stopping", err=True)
        finally:
            cluster.stop()
            if directory is None:
                shutil.rmtree(base, ignore_errors=True)
    click.echo("stopped")
