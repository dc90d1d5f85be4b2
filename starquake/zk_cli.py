"""`starquake zk ...`: ZooKeeper by hand, for development and for looking into a run.

`starquake zk up` runs an ensemble in the foreground until Ctrl-C or SIGTERM, so a developer
can point a broker or `zkCli` at it; the tests start theirs through tests/fixtures instead.
`starquake zk ls` and `starquake zk get` read any ensemble's nodes, presenting a run's
digest credentials when its nodes carry ACLs (`auth = "token"`, harness/zk_inspect.py).
"""

from __future__ import annotations

import shutil
import signal
import tempfile
import threading
from pathlib import Path
from types import FrameType

import click

from harness.targets.local.zookeeper import ZooKeeperEnsemble
from harness.zk_inspect import DIGEST_FLAG, children, data, read_digest_file


@click.group()
def zk() -> None:
    """ZooKeeper ensembles as local processes."""


@zk.command()
@click.option(
    "--nodes",
    type=click.Choice(["1", "3"]),
    default="1",
    show_default=True,
    help="Ensemble size.",
)
@click.option(
    "--dir",
    "directory",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where members keep config, data and logs (kept afterwards). "
    "Default: a temporary directory, removed on exit.",
)
def up(nodes: str, directory: Path | None) -> None:
    """Start an ensemble, print its connect string, stop it on Ctrl-C or SIGTERM."""
    stop_requested = threading.Event()

    def request_stop(signum: int, _frame: FrameType | None) -> None:
        stop_requested.set()

    # Installed before anything starts, so that a signal arriving during start-up still
    # ends in a clean stop rather than in orphaned JVMs.
    previous = {s: signal.signal(s, request_stop) for s in (signal.SIGINT, signal.SIGTERM)}
    base = directory or Path(tempfile.mkdtemp(prefix="starquake-zk-"))
    ensemble = ZooKeeperEnsemble(int(nodes), base)
    try:
        ensemble.start()
        click.echo(f"zookeeper ensemble of {nodes} serving, files in {base}")
        click.echo(f"connect string: {ensemble.connect_string}")
        for node in ensemble.nodes:
            click.echo(
                f"node {node.node_id}: pid {node.pid}, client {node.client_address}, "
                f"log {node.log_path}"
            )
        click.echo("press Ctrl-C to stop", err=True)
        # A timed wait, so the main thread regularly returns to run signal handlers.
        while not stop_requested.wait(0.5):
            pass
        click.echo("stopping", err=True)
    finally:
        ensemble.stop()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if directory is None:
            shutil.rmtree(base, ignore_errors=True)
    click.echo("stopped")


digest_option = click.option(
    DIGEST_FLAG, "digest_file", type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A user:password file, as the nodes' --metadata-digest-file (a run with "
    'auth = "token": zookeeper-digest in its data directory).')


def _digest(digest_file: Path | None) -> str | None:
    return None if digest_file is None else read_digest_file(digest_file)


@zk.command(name="ls")
@click.argument("connect")
@click.argument("path", default="/")
@digest_option
def list_children(connect: str, path: str, digest_file: Path | None) -> None:
    """Print the children of PATH (default /) in ZooKeeper CONNECT, one a line.

    CONNECT is HOST:PORT[,...], optionally with a chroot (/a: cluster a's metadata)."""
    for child in children(connect, path, _digest(digest_file)):
        click.echo(child)


@zk.command()
@click.argument("connect")
@click.argument("path")
@digest_option
def get(connect: str, path: str, digest_file: Path | None) -> None:
    """Print the data of PATH in ZooKeeper CONNECT (HOST:PORT[,...][/chroot]); bytes that
    are not UTF-8 are escaped."""
    click.echo(data(connect, path, _digest(digest_file)).decode(errors="backslashreplace"))
