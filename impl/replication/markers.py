"""PIP-33's marker entries: what each one says, and its bytes in the topic.

A marker is an entry the broker writes into the topic itself, so that it travels inline
with the messages through replication (PIP-33, "Marker messages"). Its metadata sets
`marker_type` and, where the marker must not reach every cluster, `replicate_to`:

| marker | type | replicate_to |
| --- | --- | --- |
| `SnapshotRequest` | 10 | none: every remote cluster answers |
| `SnapshotResponse` | 11 | the requesting cluster only |
| `Snapshot` | 12 | the local cluster only: it never leaves (PIP-33, "Storing snapshots") |
| `SubscriptionUpdate` | 13 | none: every cluster moves its copy of the subscription |

Markers are never delivered to consumers (`is_marker`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from google.protobuf.message import DecodeError, Message

from impl.replication.acknowledged import AcknowledgedRange
from impl.storage.api import Position
from wire.frames import MalformedFrame, encode_entry, split_entry
from wire.pulsar_api_pb2 import MessageMetadata
from wire.pulsar_markers_pb2 import (
    ClusterMessageId,
    MarkersMessageIdData,
    ReplicatedSubscriptionsSnapshot,
    ReplicatedSubscriptionsSnapshotRequest,
    ReplicatedSubscriptionsSnapshotResponse,
    ReplicatedSubscriptionsUpdate,
)

MARKER_PRODUCER = "pulsar.marker"
"""The producer name Pulsar gives marker entries."""


class MarkerType(IntEnum):
    SNAPSHOT_REQUEST = 10
    SNAPSHOT_RESPONSE = 11
    SNAPSHOT = 12
    UPDATE = 13


class MalformedMarker(ValueError):
    """An entry whose metadata says marker but whose payload cannot be read as one."""


@dataclass(frozen=True)
class SnapshotRequest:
    snapshot_id: str
    source_cluster: str


@dataclass(frozen=True)
class SnapshotResponse:
    snapshot_id: str
    cluster: str
    """The responding cluster."""
    position: Position
    """The responder's last position when the request reached it."""
    requester: str
    """The cluster that asked; the only one the response is replicated to."""


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: str
    local_position: Position
    """Where, in this cluster, the response that completed the snapshot was stored."""
    clusters: Mapping[str, Position] = field(hash=False)
    """For each remote cluster: mark-delete at `local_position` here implies this there."""
    local_cluster: str
    """The cluster that took the snapshot: the only one holding it."""


@dataclass(frozen=True)
class SubscriptionUpdate:
    subscription_name: str
    clusters: Mapping[str, Position] = field(hash=False)
    """Where each listed cluster should move the subscription's mark-delete."""
    acknowledged: tuple[AcknowledgedRange, ...] = ()
    """Our extension (document 003): messages the sender acknowledged individually."""


Marker = SnapshotRequest | SnapshotResponse | Snapshot | SubscriptionUpdate


def is_marker(metadata: MessageMetadata) -> bool:
    """Whether the dispatcher must keep this entry from consumers (and acknowledge it for
    them): every marker is broker business."""
    return metadata.HasField("marker_type")


def encode_marker(marker: Marker, publish_time_ms: int) -> bytes:
    """The entry to append to the local topic: `[metadataSize][MessageMetadata][payload]`."""
    marker_type, replicate_to, payload = _encoders[type(marker)](marker)
    metadata = MessageMetadata(producer_name=MARKER_PRODUCER, sequence_id=0,
                               publish_time=publish_time_ms, marker_type=marker_type,
                               replicate_to=replicate_to)
    return encode_entry(metadata, payload.SerializeToString())


def decode_marker(entry: bytes) -> Marker | None:
    """The marker an entry holds, or None for an ordinary message or a marker type that is
    not PIP-33's (Pulsar also writes transaction markers)."""
    try:
        metadata, payload = split_entry(entry)
    except MalformedFrame as exc:
        raise MalformedMarker(str(exc)) from None
    return marker_of(metadata, payload)


def marker_of(metadata: MessageMetadata, payload: bytes) -> Marker | None:
    """As `decode_marker`, for an entry already split."""
    if not metadata.HasField("marker_type") or metadata.marker_type not in _decoders:
        return None
    message_class, convert = _decoders[metadata.marker_type]
    message = message_class()
    try:
        message.ParseFromString(payload)
    except DecodeError as exc:
        raise MalformedMarker(f"unreadable {message_class.__name__}: {exc}") from None
    if not message.IsInitialized():  # parsing alone does not insist on required fields
        # Every message has FindInitializationErrors; types-protobuf does not declare it.
        missing = message.FindInitializationErrors()  # type: ignore[attr-defined]
        raise MalformedMarker(f"unreadable {message_class.__name__}: missing "
                              f"{', '.join(missing)}")
    try:
        return convert(message, list(metadata.replicate_to))
    except ValueError as exc:  # MalformedMarker included, or an empty acknowledged range
        raise MalformedMarker(str(exc)) from None


# ---- conversions ------------------------------------------------------------------------

def _id(position: Position) -> MarkersMessageIdData:
    return MarkersMessageIdData(ledger_id=position.ledger_id, entry_id=position.entry_id)


def _position(message_id: MarkersMessageIdData) -> Position:
    return Position(message_id.ledger_id, message_id.entry_id)


def _cluster_ids(clusters: Mapping[str, Position]) -> list[ClusterMessageId]:
    return [ClusterMessageId(cluster=name, message_id=_id(position))
            for name, position in sorted(clusters.items())]


def _clusters(ids: Iterable[ClusterMessageId]) -> dict[str, Position]:
    return {c.cluster: _position(c.message_id) for c in ids}


def _only(replicate_to: list[str], what: str) -> str:
    if len(replicate_to) != 1:
        raise MalformedMarker(f"a {what} must be restricted to exactly one cluster, "
                              f"not {replicate_to}")
    return replicate_to[0]


def _encode_request(m: SnapshotRequest) -> tuple[int, list[str], Message]:
    return (MarkerType.SNAPSHOT_REQUEST, [],
            ReplicatedSubscriptionsSnapshotRequest(snapshot_id=m.snapshot_id,
                                                   source_cluster=m.source_cluster))


def _encode_response(m: SnapshotResponse) -> tuple[int, list[str], Message]:
    return (MarkerType.SNAPSHOT_RESPONSE, [m.requester],
            ReplicatedSubscriptionsSnapshotResponse(
                snapshot_id=m.snapshot_id,
                cluster=ClusterMessageId(cluster=m.cluster, message_id=_id(m.position))))


def _encode_snapshot(m: Snapshot) -> tuple[int, list[str], Message]:
    return (MarkerType.SNAPSHOT, [m.local_cluster],
            ReplicatedSubscriptionsSnapshot(snapshot_id=m.snapshot_id,
                                            local_message_id=_id(m.local_position),
                                            clusters=_cluster_ids(m.clusters)))


def _encode_update(m: SubscriptionUpdate) -> tuple[int, list[str], Message]:
    update = ReplicatedSubscriptionsUpdate(subscription_name=m.subscription_name,
                                           clusters=_cluster_ids(m.clusters))
    for r in m.acknowledged:
        update.acknowledged.add(origin_cluster=r.origin_cluster, ledger_id=r.ledger_id,
                                first_entry_id=r.first_entry_id, last_entry_id=r.last_entry_id)
    return MarkerType.UPDATE, [], update


# By the marker's class. Each encoder takes only markers of that class, which the dict's
# type cannot say: hence `Any`.
_encoders: dict[type[Marker], Callable[[Any], tuple[int, list[str], Message]]] = {
    SnapshotRequest: _encode_request, SnapshotResponse: _encode_response,
    Snapshot: _encode_snapshot, SubscriptionUpdate: _encode_update}


def _decode_request(m: ReplicatedSubscriptionsSnapshotRequest, _: list[str]) -> Marker:
    return SnapshotRequest(m.snapshot_id, m.source_cluster)


def _decode_response(m: ReplicatedSubscriptionsSnapshotResponse,
                     replicate_to: list[str]) -> Marker:
    return SnapshotResponse(m.snapshot_id, m.cluster.cluster, _position(m.cluster.message_id),
                            _only(replicate_to, "snapshot response"))


def _decode_snapshot(m: ReplicatedSubscriptionsSnapshot, replicate_to: list[str]) -> Marker:
    return Snapshot(m.snapshot_id, _position(m.local_message_id), _clusters(m.clusters),
                    _only(replicate_to, "snapshot"))


def _decode_update(m: ReplicatedSubscriptionsUpdate, _: list[str]) -> Marker:
    return SubscriptionUpdate(m.subscription_name, _clusters(m.clusters), tuple(
        AcknowledgedRange(r.origin_cluster, r.ledger_id, r.first_entry_id, r.last_entry_id)
        for r in m.acknowledged))


# By `marker_type`: the payload's message class, and its decoder (of that class only).
_decoders: dict[int, tuple[type[Message], Callable[[Any, list[str]], Marker]]] = {
    MarkerType.SNAPSHOT_REQUEST: (ReplicatedSubscriptionsSnapshotRequest, _decode_request),
    MarkerType.SNAPSHOT_RESPONSE: (ReplicatedSubscriptionsSnapshotResponse, _decode_response),
    MarkerType.SNAPSHOT: (ReplicatedSubscriptionsSnapshot, _decode_snapshot),
    MarkerType.UPDATE: (ReplicatedSubscriptionsUpdate, _decode_update),
}
