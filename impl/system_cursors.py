"""Cursors a broker keeps on a topic for itself, which are no subscriptions: a replicator's
(`pulsar.repl.{cluster}`) and deduplication's snapshot (`pulsar.dedup`). Subscription lists,
stats and metrics leave them out, as Pulsar's do; internal stats still show them.

Only names live here, so the broker, the admin API and replication all ask the same
question without importing one another."""

from __future__ import annotations

REPLICATOR_PREFIX = "pulsar.repl."
"""Pulsar's replicator cursor names, `pulsar.repl.{remote cluster}`; a replicator's
producer in the remote cluster is named the same way after the local cluster."""
DEDUPLICATION_CURSOR = "pulsar.dedup"
"""Pulsar's name for the cursor that holds a topic's deduplication snapshot."""


def is_replicator_cursor(name: str) -> bool:
    """Whether a cursor belongs to a replicator rather than a subscription (stats leave
    these out, as Pulsar's do)."""
    return name.startswith(REPLICATOR_PREFIX)


def is_system_cursor(name: str) -> bool:
    return is_replicator_cursor(name) or name == DEDUPLICATION_CURSOR
