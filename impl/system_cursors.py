"""Cursors a broker keeps on a topic for itself, which are no subscriptions: a replicator's
(`pulsar.repl.{cluster}`) and deduplication's snapshot (`pulsar.dedup`). Subscription lists,
stats and metrics leave them out, as Pulsar's do; internal stats still show them."""

from __future__ import annotations

from impl.replication.replicator import is_replicator_cursor

DEDUPLICATION_CURSOR = "pulsar.dedup"
"""Pulsar's name for the cursor that holds a topic's deduplication snapshot."""


def is_system_cursor(name: str) -> bool:
    return is_replicator_cursor(name) or name == DEDUPLICATION_CURSOR
