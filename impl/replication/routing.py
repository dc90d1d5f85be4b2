"""Which entries a replicator may send to a remote cluster (002, the replicator's filter).

The replicator owns this decision; it lives beside the markers because their
`replicate_to` restrictions only hold if every replicator applies it.
"""

from __future__ import annotations

from wire.pulsar_api_pb2 import MessageMetadata


def replicates_to(metadata: MessageMetadata, remote_cluster: str, *,
                  honour_origin: bool = True) -> bool:
    """Whether an entry of the local topic goes to `remote_cluster`: not when it came from
    another cluster (a replicated message is never replicated again; `honour_origin=False`
    is mutant `replicated-from-ignored`), not when `replicate_to` is set and leaves that
    cluster out (a snapshot marker names only its own cluster, a snapshot response only
    the requester)."""
    if honour_origin and metadata.HasField("replicated_from"):
        return False
    return not metadata.replicate_to or remote_cluster in metadata.replicate_to
