"""The client's view of a scalable topic's segment DAG, built from what a DAG watch session
(PIP-468 commands 70-72) sends: every segment with its hash range, whether it is still
active, and the edges to its parents and children. The controller in the system under test
owns the DAG; the client only reads each epoch the brokers push, to route keys and to know
which segments exist."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from harness.scalable_client.errors import NoActiveSegment
from wire.pulsar_api_pb2 import ScalableTopicDAG, SegmentState


@dataclass(frozen=True)
class Segment:
    segment_id: int
    hash_start: int
    hash_end: int
    """The key hashes the segment holds, both ends inclusive."""
    active: bool
    parent_ids: tuple[int, ...] = ()
    child_ids: tuple[int, ...] = ()

    def holds(self, hash_value: int) -> bool:
        return self.hash_start <= hash_value <= self.hash_end


@dataclass(frozen=True)
class Layout:
    epoch: int
    segments: Mapping[int, Segment]
    """Every segment the DAG names, active and sealed, by id."""

    @classmethod
    def of(cls, dag: ScalableTopicDAG) -> Layout:
        segments = {s.segment_id: Segment(
            s.segment_id, s.hash_start, s.hash_end, s.state == SegmentState.SEGMENT_ACTIVE,
            tuple(s.parent_ids), tuple(s.child_ids)) for s in dag.segments}
        return cls(dag.epoch, segments)

    @property
    def active_segments(self) -> tuple[Segment, ...]:
        """The active segments in hash order; they divide the hash space between them."""
        return tuple(sorted((s for s in self.segments.values() if s.active),
                            key=lambda s: s.hash_start))

    def segment(self, segment_id: int) -> Segment:
        return self.segments[segment_id]

    def active_segment_for(self, hash_value: int) -> Segment:
        """The active segment whose range holds `hash_value`: where a key with that hash
        is sent. `NoActiveSegment` if the DAG leaves the hash uncovered."""
        for segment in self.active_segments:
            if segment.holds(hash_value):
                return segment
        raise NoActiveSegment(self.epoch, hash_value)
