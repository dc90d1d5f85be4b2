"""The DAG a watch session sends is the layout the controller wrote (pure, no cluster)."""

from __future__ import annotations

import pytest

from impl.broker.scalable_commands import dag_of
from impl.client.dag import layout_of
from impl.protocol.pulsar_api_pb2 import ScalableTopicDAG
from impl.scalable.admin_segments import segment_path
from impl.scalable.layout import SegmentLayout


def test_a_layout_survives_the_trip_through_the_protocol() -> None:
    layout = SegmentLayout.initial(2).split_segment(0).merge_segments(2, 3).split_segment(1)
    dag = ScalableTopicDAG.FromString(dag_of(layout, {4: "pulsar://b:6650"},
                                             "pulsar://c:6650").SerializeToString())
    assert dag.controller_broker_url == "pulsar://c:6650"
    assert [(b.segment_id, b.broker_url) for b in dag.segment_brokers] == [
        (4, "pulsar://b:6650")]
    received = layout_of(dag)
    assert received.epoch == layout.epoch == 3
    assert received.segments == layout.segments
    assert [s.segment_id for s in received.active_segments] == [4, 5, 6]


def test_segment_topics_map_onto_the_segments_api() -> None:
    assert segment_path("segment://acme/orders/payments/0000-7fff-1") == (
        "/admin/v2/segments/acme/orders/payments/0000-7fff-1")
    with pytest.raises(ValueError, match="not a segment"):
        segment_path("persistent://acme/orders/payments")
