"""The DAG a watch session sends is the layout the controller wrote (pure, no cluster)."""

from __future__ import annotations

import pytest

from harness.scalable_client.layout import Layout, Segment
from impl.broker.scalable_commands import dag_of
from impl.scalable.layout import SegmentLayout
from wire.pulsar_api_pb2 import ScalableTopicDAG
from wire.topic_names import ScalableTopicName, segment_admin_path


def test_a_layout_survives_the_trip_through_the_protocol() -> None:
    layout = SegmentLayout.initial(2).split_segment(0).merge_segments(2, 3).split_segment(1)
    dag = ScalableTopicDAG.FromString(dag_of(layout, {4: "pulsar://b:6650"},
                                             "pulsar://c:6650").SerializeToString())
    assert dag.controller_broker_url == "pulsar://c:6650"
    assert [(b.segment_id, b.broker_url) for b in dag.segment_brokers] == [
        (4, "pulsar://b:6650")]
    received = Layout.of(dag)
    assert received.epoch == layout.epoch == 3
    assert received.segments == {
        s.segment_id: Segment(s.segment_id, s.hash_range.start, s.hash_range.end, s.is_active,
                              s.parent_ids, s.child_ids) for s in layout.segments.values()}
    assert [s.segment_id for s in received.active_segments] == [4, 5, 6]
    assert [(s.created_at_epoch, s.sealed_at_epoch) for s in dag.segments] == [
        (s.created_at_epoch, s.sealed_at_epoch) for s in layout.segments.values()]
    for segment in layout.active_segments:  # the client routes a hash where the broker does
        for hash_value in (segment.hash_range.start, segment.hash_range.end):
            assert received.active_segment_for(hash_value).segment_id == segment.segment_id


def test_the_client_names_segment_topics_as_the_brokers_do() -> None:
    """Both sides name a segment's topic from what they know of it: the broker from its
    layout, the client from the DAG it was sent."""
    layout = SegmentLayout.initial(2).split_segment(0)
    received = Layout.of(dag_of(layout, {}, None))
    name = ScalableTopicName.parse("topic://acme/orders/payments")
    assert [name.segment_topic(received.segment(i)) for i in sorted(layout.segments)] == [
        name.segment_topic(layout.segment(i)) for i in sorted(layout.segments)] == [
        "segment://acme/orders/payments/0000-7fff-0",
        "segment://acme/orders/payments/8000-ffff-1",
        "segment://acme/orders/payments/0000-3fff-2",
        "segment://acme/orders/payments/4000-7fff-3"]
    with pytest.raises(ValueError):
        ScalableTopicName.parse("persistent://acme/orders/payments")


def test_segment_topics_map_onto_the_segments_api() -> None:
    assert segment_admin_path("segment://acme/orders/payments/0000-7fff-1") == (
        "/admin/v2/segments/acme/orders/payments/0000-7fff-1")
    for wrong in ("persistent://acme/orders/payments", "segment://acme/orders/payments"):
        with pytest.raises(ValueError, match="expected segment://"):
            segment_admin_path(wrong)
