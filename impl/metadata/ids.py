"""Cluster-wide unique, increasing ids from ZooKeeper sequential nodes.

BookKeeper allocates ledger ids this way: create a persistent-sequential child, read the
sequence number ZooKeeper appended, delete the child. The parent's counter never goes
back, even when children are deleted, so ids are unique without any compare-and-set
contention between brokers.
"""

from __future__ import annotations

from impl.metadata.errors import NotFound
from impl.metadata.store import MetadataStore


def allocate_id(store: MetadataStore, prefix: str) -> int:
    """A new id from the sequence under `prefix` (e.g. `paths.LEDGER_ID_PREFIX`)."""
    created = store.create(prefix, sequential=True)
    try:
        store.delete(created)
    except NotFound:
        pass  # deleted by someone cleaning up; the id is still ours
    return int(created[len(prefix) :])
