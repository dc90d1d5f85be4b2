"""Marker entries: their bytes, where replication may take them, and that consumers never
see them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from impl.replication.acknowledged import AcknowledgedRange
from impl.replication.markers import (
    MARKER_PRODUCER,
    MalformedMarker,
    Marker,
    MarkerType,
    Snapshot,
    SnapshotRequest,
    SnapshotResponse,
    SubscriptionUpdate,
    decode_marker,
    encode_marker,
    is_marker,
)
from impl.replication.routing import replicates_to
from impl.storage.api import Position
from wire.frames import encode_entry, split_entry
from wire.pulsar_api_pb2 import MessageMetadata

names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1,
                max_size=12)
positions = st.builds(Position, st.integers(0, 2**63), st.integers(0, 2**63))
cluster_positions = st.dictionaries(names, positions, max_size=4)
ranges = st.builds(lambda c, ledger, f, n: AcknowledgedRange(c, ledger, f, f + n), names,
                   st.integers(0, 2**40), st.integers(0, 2**40), st.integers(0, 100))
markers = st.one_of(
    st.builds(SnapshotRequest, names, names),
    st.builds(SnapshotResponse, names, names, positions, names),
    st.builds(Snapshot, names, positions, cluster_positions, names),
    st.builds(SubscriptionUpdate, names, cluster_positions,
              st.lists(ranges, max_size=5).map(tuple)),
)


@given(markers, st.integers(0, 2**50))
def test_every_marker_reads_back_as_written(marker: Marker, publish_time: int) -> None:
    entry = encode_marker(marker, publish_time)
    assert decode_marker(entry) == marker
    metadata, _ = split_entry(entry)
    assert (metadata.producer_name, metadata.sequence_id, metadata.publish_time) == (
        MARKER_PRODUCER, 0, publish_time)
    assert is_marker(metadata)


def _metadata(marker: Marker) -> MessageMetadata:
    return split_entry(encode_marker(marker, 0))[0]


def test_marker_types_and_destinations_follow_pip_33() -> None:
    p = Position(3, 4)
    expected = [
        (SnapshotRequest("s", "a"), MarkerType.SNAPSHOT_REQUEST, []),
        (SnapshotResponse("s", "b", p, requester="a"), MarkerType.SNAPSHOT_RESPONSE, ["a"]),
        (Snapshot("s", p, {"b": p}, local_cluster="a"), MarkerType.SNAPSHOT, ["a"]),
        (SubscriptionUpdate("sub", {"b": p}), MarkerType.UPDATE, []),
    ]
    for marker, marker_type, replicate_to in expected:
        metadata = _metadata(marker)
        assert (metadata.marker_type, list(metadata.replicate_to)) == (marker_type,
                                                                       replicate_to)


def test_replication_takes_each_marker_only_where_it_belongs() -> None:
    p = Position(3, 4)
    request = _metadata(SnapshotRequest("s", "a"))
    response = _metadata(SnapshotResponse("s", "b", p, requester="a"))
    snapshot = _metadata(Snapshot("s", p, {"b": p}, local_cluster="a"))
    update = _metadata(SubscriptionUpdate("sub", {"b": p}))
    remotes = ["a", "b", "c"]
    assert [r for r in remotes if replicates_to(request, r)] == remotes
    assert [r for r in remotes if replicates_to(response, r)] == ["a"]
    assert [r for r in remotes if r != "a" and replicates_to(snapshot, r)] == []
    assert [r for r in remotes if replicates_to(update, r)] == remotes
    update.replicated_from = "b"  # arrived from b: never sent on
    assert [r for r in remotes if replicates_to(update, r)] == []


def test_a_message_from_another_cluster_is_sent_on_only_by_the_mutant() -> None:
    """`replicated-from-ignored` drops the origin rule: what b sent here would go back."""
    metadata = MessageMetadata(producer_name="app", sequence_id=1, publish_time=1,
                               replicated_from="b")
    assert not replicates_to(metadata, "b") and not replicates_to(metadata, "c")
    assert replicates_to(metadata, "b", honour_origin=False)


def test_ordinary_messages_are_not_markers() -> None:
    metadata = MessageMetadata(producer_name="app", sequence_id=1, publish_time=1)
    assert not is_marker(metadata)
    assert decode_marker(encode_entry(metadata, b"payload")) is None
    metadata.marker_type = 20  # a transaction marker: not ours to read, still not for consumers
    assert is_marker(metadata)
    assert decode_marker(encode_entry(metadata, b"")) is None


@pytest.mark.parametrize("payload", [b"\xff\xff", b""], ids=["garbage", "required-missing"])
def test_an_unreadable_marker_is_refused(payload: bytes) -> None:
    metadata = MessageMetadata(producer_name=MARKER_PRODUCER, sequence_id=0, publish_time=1,
                               marker_type=MarkerType.UPDATE)
    with pytest.raises(MalformedMarker, match="unreadable ReplicatedSubscriptionsUpdate"):
        decode_marker(encode_entry(metadata, payload))


def test_a_response_must_name_exactly_one_destination() -> None:
    entry = encode_marker(SnapshotResponse("s", "b", Position(1, 1), requester="a"), 0)
    metadata, payload = split_entry(entry)
    metadata.replicate_to.append("c")
    with pytest.raises(MalformedMarker, match="exactly one cluster"):
        decode_marker(encode_entry(metadata, payload))
