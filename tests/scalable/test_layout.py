"""SegmentLayout: PIP-468's epoch-3 example, split and merge arithmetic, the domain errors."""

from __future__ import annotations

import json

import pytest

from impl.scalable.errors import (
    HashOutOfRange,
    InvalidLayout,
    SegmentNotActive,
    SegmentNotPrunable,
    SegmentsNotAdjacent,
    SegmentTooSmall,
)
from impl.scalable.hashing import key_hash
from impl.scalable.layout import HashRange, SegmentLayout, SegmentState
from wire.topic_names import ScalableTopicName

# PIP-468 "Metadata Store Schema", as the document prints it.
EPOCH_3_EXAMPLE = """
{
  "epoch": 3,
  "nextSegmentId": 5,
  "segments": {
    "0": { "segmentId": 0, "hashRange": {"start": 0, "end": 65535},
"state": "SEALED", "parentIds": [], "childIds": [1, 2],
"createdAtEpoch": 0, "sealedAtEpoch": 1 },
    "1": { "segmentId": 1, "hashRange": {"start": 0, "end": 32767},
"state": "SEALED", "parentIds": [0], "childIds": [3, 4],
"createdAtEpoch": 1, "sealedAtEpoch": 3 },
    "2": { "segmentId": 2, "hashRange": {"start": 32768, "end":
65535}, "state": "ACTIVE", "parentIds": [0], "childIds": [],
"createdAtEpoch": 1, "sealedAtEpoch": 0 },
    "3": { "segmentId": 3, "hashRange": {"start": 0, "end": 16383},
"state": "ACTIVE", "parentIds": [1], "childIds": [], "createdAtEpoch":
3, "sealedAtEpoch": 0 },
    "4": { "segmentId": 4, "hashRange": {"start": 16384, "end":
32767}, "state": "ACTIVE", "parentIds": [1], "childIds": [],
"createdAtEpoch": 3, "sealedAtEpoch": 0 }
  },
  "properties": {}
}
"""


def test_the_documents_epoch_3_example_round_trips_with_its_field_names() -> None:
    document = json.loads(EPOCH_3_EXAMPLE)
    layout = SegmentLayout.from_json(EPOCH_3_EXAMPLE.encode())

    dumped = json.loads(layout.to_json())
    assert dumped == document
    assert list(dumped) == list(document)
    assert list(dumped["segments"]["1"]) == list(document["segments"]["1"])
    assert SegmentLayout.from_json(layout.to_json()) == layout
    assert [s.segment_id for s in layout.active_segments] == [3, 4, 2]
    assert layout.segment(1).state == SegmentState.SEALED
    assert layout.lineage(3).ancestors == {0, 1}
    assert layout.lineage(0).descendants == {1, 2, 3, 4}


def test_split_halves_the_range_and_advances_epoch_and_next_id() -> None:
    layout = SegmentLayout.initial(2)
    assert [s.hash_range for s in layout.active_segments] == [
        HashRange(0x0000, 0x7FFF), HashRange(0x8000, 0xFFFF)]

    split = layout.split_segment(0)

    assert (split.epoch, split.next_segment_id) == (1, 4)
    assert split.segment(2).hash_range == HashRange(0x0000, 0x3FFF)
    assert split.segment(3).hash_range == HashRange(0x4000, 0x7FFF)
    assert split.segment(0).child_ids == (2, 3) and split.segment(0).sealed_at_epoch == 1
    assert split.segment(2).parent_ids == (0,) and split.segment(2).created_at_epoch == 1
    assert layout.segment(0).is_active, "the original layout is never modified"


def test_merge_of_adjacent_segments_covers_both_and_seals_them() -> None:
    layout = SegmentLayout.initial(4)

    merged = layout.merge_segments(2, 1)

    child = merged.segment(4)
    assert child.hash_range == HashRange(0x4000, 0xBFFF)
    assert child.parent_ids == (1, 2)
    assert merged.segment(1).child_ids == merged.segment(2).child_ids == (4,)
    assert (merged.epoch, merged.next_segment_id) == (1, 5)


def test_find_active_segment_routes_every_key_into_its_range() -> None:
    layout = SegmentLayout.initial(3).split_segment(1).merge_segments(0, 3)
    for key in ("a", "order-17", "ünïcode", ""):
        assert layout.find_active_segment(key_hash(key)).hash_range.contains(key_hash(key))
    with pytest.raises(HashOutOfRange):
        layout.find_active_segment(0x10000)


def test_the_key_hash_is_murmur3_of_the_utf8_bytes_modulo_65536() -> None:
    # mmh3.hash(b"hello", 0) is 613153351: non-negative already, so only the modulo acts.
    assert key_hash("hello") == 613153351 % 65536


@pytest.mark.parametrize("change, error", [
    (lambda layout: layout.split_segment(0).split_segment(0), SegmentNotActive),
    (lambda layout: layout.merge_segments(0, 2), SegmentsNotAdjacent),
    (lambda layout: layout.merge_segments(1, 1), SegmentsNotAdjacent),
    (lambda layout: layout.prune_segment(0), SegmentNotPrunable),
    (lambda layout: layout.split_segment(0).split_segment(4).prune_segment(4), SegmentNotPrunable),
])
def test_invalid_changes_raise_domain_errors(change, error) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error):
        change(SegmentLayout.initial(4))


def test_a_single_hash_segment_cannot_split() -> None:
    layout = SegmentLayout.initial(65536)
    with pytest.raises(SegmentTooSmall, match="segment 7 \\[0x0007, 0x0007\\]"):
        layout.split_segment(7)


def test_prune_from_the_root_detaches_the_children() -> None:
    layout = SegmentLayout.initial(1).split_segment(0).prune_segment(0)
    assert 0 not in layout.segments
    assert layout.segment(1).parent_ids == () and layout.epoch == 2
    assert SegmentLayout.from_json(layout.to_json()) == layout


@pytest.mark.parametrize("mutilate, reason", [
    (lambda d: d["segments"]["2"]["hashRange"].update(start=40000), "gap or overlap"),
    (lambda d: d["segments"]["3"].update(parentIds=[]), "segment 3 does not name its parent 1"),
    (lambda d: d.update(nextSegmentId=4), "not below nextSegmentId"),
    (lambda d: d["segments"]["1"].update(childIds=[3, 9]), "child segment 9"),
    (lambda d: d.pop("epoch"), "'epoch' is missing"),
])
def test_stored_metadata_that_breaks_the_dag_is_refused(mutilate, reason) -> None:  # type: ignore[no-untyped-def]
    document = json.loads(EPOCH_3_EXAMPLE)
    mutilate(document)
    with pytest.raises(InvalidLayout, match=reason):
        SegmentLayout.from_metadata(document)


def test_segment_topic_names_carry_the_descriptor() -> None:
    topic = ScalableTopicName.parse("topic://acme/orders/payments")
    segment = SegmentLayout.initial(2).segment(0)
    assert topic.segment_topic(segment) == "segment://acme/orders/payments/0000-7fff-0"
