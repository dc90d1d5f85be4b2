"""Our extension beyond PIP-33 (document 003): messages acknowledged out of order.

PIP-33 moves only the mark-delete position to other clusters, so after a failover every
message acknowledged individually above it is delivered again; with a delayed message
holding mark-delete back for a day that is a day of duplicates (003, "No synchronization
for individuallyDeletedMessages"). As 003 does, we name each message by where it was first
published (its *identity*: origin cluster and position there), which is the same in every
cluster: the replicator stamps the origin position into a replicated message's metadata
(field 1001, `OriginalClusterPositionField`), and a cluster reads a local message's identity
from its own position. Updates then carry the identities a subscription acknowledged
individually (`ReplicatedSubscriptionsUpdate.acknowledged`, field 1001), and the receiving
cluster skips those messages before dispatch.

Everything here only ever drops a message some cluster acknowledged: ranges are built from
exactly consecutive entries, and whatever does not fit in an update is left out, which
means a duplicate after failover, never a loss.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from impl.storage.api import Entry, Position
from wire.frames import split_entry
from wire.pulsar_api_pb2 import MessageMetadata
from wire.pulsar_markers_pb2 import OriginalClusterPositionField


@dataclass(frozen=True, order=True)
class MessageIdentity:
    """A message's name in every cluster: the cluster it was first published in, and its
    position there."""

    cluster: str
    position: Position


@dataclass(frozen=True, order=True)
class AcknowledgedRange:
    """Entries `first_entry_id..last_entry_id` (both included) of one ledger of the origin
    cluster, all acknowledged."""

    origin_cluster: str
    ledger_id: int
    first_entry_id: int
    last_entry_id: int

    def __post_init__(self) -> None:
        if self.first_entry_id > self.last_entry_id:
            raise ValueError(f"empty range {self.ledger_id}:{self.first_entry_id}.."
                             f"{self.last_entry_id} of {self.origin_cluster}")


def stamp_original_position(metadata: MessageMetadata, origin: MessageIdentity) -> None:
    """For the replicator: record in `metadata` where the message was first published, before
    sending it to a remote cluster. Stamp a message once: replicated messages are never
    replicated again (002), so the origin is always the sending cluster."""
    field = OriginalClusterPositionField()
    field.original_cluster_position.cluster = origin.cluster
    field.original_cluster_position.message_id.ledger_id = origin.position.ledger_id
    field.original_cluster_position.message_id.entry_id = origin.position.entry_id
    metadata.MergeFromString(field.SerializeToString())  # kept as an unknown field


def original_position(metadata: MessageMetadata) -> MessageIdentity | None:
    """The origin stamped by `stamp_original_position`, or None on a message published here
    (or replicated by a broker that does not stamp)."""
    field = OriginalClusterPositionField()
    field.ParseFromString(metadata.SerializeToString())
    if not field.HasField("original_cluster_position"):
        return None
    stamped = field.original_cluster_position
    return MessageIdentity(stamped.cluster, Position(stamped.message_id.ledger_id,
                                                     stamped.message_id.entry_id))


def identity_of(local_cluster: str, position: Position,
                metadata: MessageMetadata) -> MessageIdentity:
    """The identity of the entry at `position` of this cluster's copy of the topic."""
    return original_position(metadata) or MessageIdentity(local_cluster, position)


def acknowledged_ranges(identities: Iterable[MessageIdentity],
                        limit: int) -> tuple[AcknowledgedRange, ...]:
    """Compress the identities of individually acknowledged messages into at most `limit`
    ranges for an update. Give them in the subscription's order (nearest mark-delete
    first): when they do not fit, the later ones are left out."""
    ranges: list[AcknowledgedRange] = []
    last_of_origin: dict[str, int] = {}  # origin cluster -> index of its latest range
    for identity in identities:
        ledger, entry = identity.position.ledger_id, identity.position.entry_id
        index = last_of_origin.get(identity.cluster)
        if index is not None:
            latest = ranges[index]
            if (latest.ledger_id == ledger
                    and latest.first_entry_id <= entry <= latest.last_entry_id):
                continue
            if latest.ledger_id == ledger and entry == latest.last_entry_id + 1:
                ranges[index] = AcknowledgedRange(identity.cluster, ledger,
                                                  latest.first_entry_id, entry)
                continue
        if len(ranges) == limit:
            break
        last_of_origin[identity.cluster] = len(ranges)
        ranges.append(AcknowledgedRange(identity.cluster, ledger, entry, entry))
    return tuple(ranges)


class AcknowledgedElsewhere:
    """The messages other clusters reported acknowledged for one subscription, searchable by
    identity. Overlapping and touching ranges are merged once, so a lookup is one bisection."""

    def __init__(self, ranges: Iterable[AcknowledgedRange] = ()) -> None:
        by_origin: dict[str, list[tuple[int, int, int]]] = {}
        for r in sorted(ranges):
            spans = by_origin.setdefault(r.origin_cluster, [])
            if spans and spans[-1][0] == r.ledger_id and r.first_entry_id <= spans[-1][2] + 1:
                ledger, first, last = spans[-1]
                spans[-1] = (ledger, first, max(last, r.last_entry_id))
            else:
                spans.append((r.ledger_id, r.first_entry_id, r.last_entry_id))
        self._spans = by_origin

    def __contains__(self, identity: MessageIdentity) -> bool:
        spans = self._spans.get(identity.cluster, [])
        ledger, entry = identity.position.ledger_id, identity.position.entry_id
        index = bisect_right(spans, (ledger, entry, float("inf"))) - 1
        if index < 0:
            return False
        span_ledger, _, last = spans[index]
        return span_ledger == ledger and entry <= last

    def __bool__(self) -> bool:
        return bool(self._spans)


@dataclass(frozen=True)
class FilteredEntries:
    deliver: list[Entry]
    already_acknowledged: list[Entry]
    """Acknowledged in another cluster: acknowledge them here instead of dispatching."""


def filter_acknowledged(local_cluster: str, entries: Sequence[Entry],
                        acknowledged: AcknowledgedElsewhere) -> FilteredEntries:
    """For the dispatcher, before it hands entries to consumers (003's
    `filterEntriesForConsumer`): split off what another cluster already acknowledged."""
    deliver: list[Entry] = []
    skipped: list[Entry] = []
    for entry in entries:
        metadata, _ = split_entry(entry.data)
        identity = identity_of(local_cluster, entry.position, metadata)
        (skipped if identity in acknowledged else deliver).append(entry)
    return FilteredEntries(deliver, skipped)
