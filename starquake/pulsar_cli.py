"""`starquake pulsar ...`: the real Apache Pulsar that the `apache-pulsar` backend runs
(docs/apache-pulsar.md)."""

from __future__ import annotations

import click

from harness.targets.apache_pulsar.distribution import LOCK_FILE, fetch


@click.group()
def pulsar() -> None:
    """Apache Pulsar's official distribution, for the apache-pulsar backend."""


@pulsar.command("fetch")
@click.option("--version", "version", default=None, metavar="V",
              help="A release such as 4.0.8 [the version pulsar-lock.toml records].")
def fetch_command(version: str | None) -> None:
    """Resolve the binary distribution through Maven into the cache ($STARQUAKE_PULSAR_CACHE, else
    ~/.cache/starquake/pulsar), check its SHA-512 against the lock file (or record it
    there, for a version the lock does not name), and unpack it."""
    distribution = fetch(version)
    click.echo(f"Apache Pulsar {distribution.version}: {distribution.home}")
    click.echo(f"sha512 {distribution.sha512} ({LOCK_FILE})")

