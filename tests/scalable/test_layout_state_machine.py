"""Random splits, merges and prunes: the DAG's invariants hold after every step."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from impl.scalable.errors import SegmentTooSmall
from impl.scalable.layout import SegmentLayout


class LayoutMachine(RuleBasedStateMachine):
    layout: SegmentLayout

    @initialize(segments=st.integers(1, 8))
    def create(self, segments: int) -> None:
        self.layout = SegmentLayout.initial(segments)
        self.epochs = [self.layout.epoch]

    def _changed(self, layout: SegmentLayout) -> None:
        self.layout = layout
        self.epochs.append(layout.epoch)

    @rule(data=st.data())
    def split(self, data: st.DataObject) -> None:
        segment = data.draw(st.sampled_from(self.layout.active_segments))
        try:
            layout = self.layout.split_segment(segment.segment_id)
        except SegmentTooSmall:
            assert segment.hash_range.start == segment.hash_range.end
            return
        first, second = (layout.segment(i) for i in layout.segment(segment.segment_id).child_ids)
        assert first.hash_range.start == segment.hash_range.start
        assert second.hash_range.end == segment.hash_range.end
        assert abs((first.hash_range.end - first.hash_range.start)
                   - (second.hash_range.end - second.hash_range.start)) <= 1
        self._changed(layout)

    @precondition(lambda self: len(self.layout.active_segments) > 1)
    @rule(data=st.data())
    def merge(self, data: st.DataObject) -> None:
        index = data.draw(st.integers(0, len(self.layout.active_segments) - 2))
        low, high = self.layout.active_segments[index:index + 2]
        layout = self.layout.merge_segments(high.segment_id, low.segment_id)
        merged = layout.segment(self.layout.next_segment_id)
        assert (merged.hash_range.start, merged.hash_range.end) == (
            low.hash_range.start, high.hash_range.end)
        self._changed(layout)

    @precondition(lambda self: any(not s.is_active and not s.parent_ids
                                   for s in self.layout.segments.values()))
    @rule(data=st.data())
    def prune(self, data: st.DataObject) -> None:
        roots = [s for s in self.layout.segments.values() if not s.is_active and not s.parent_ids]
        self._changed(self.layout.prune_segment(data.draw(st.sampled_from(roots)).segment_id))

    @invariant()
    def active_segments_partition_the_hash_space(self) -> None:
        covered = 0
        for segment in sorted(self.layout.active_segments, key=lambda s: s.hash_range.start):
            assert segment.hash_range.start == covered, (covered, segment)
            covered = segment.hash_range.end + 1
        assert covered == 0x10000

    @invariant()
    def epochs_strictly_increase(self) -> None:
        assert all(a < b for a, b in zip(self.epochs, self.epochs[1:]))

    @invariant()
    def lineage_is_linked_both_ways(self) -> None:
        segments = self.layout.segments
        for segment in segments.values():
            assert segment.segment_id < self.layout.next_segment_id
            for child in segment.child_ids:
                assert segment.segment_id in segments[child].parent_ids
                assert segment.segment_id in self.layout.lineage(child).ancestors
            for parent in segment.parent_ids:
                assert segment.segment_id in segments[parent].child_ids
            if segment.is_active:
                assert segment.child_ids == () and segment.sealed_at_epoch == 0
            else:
                assert segment.created_at_epoch < segment.sealed_at_epoch <= self.layout.epoch
                # Its children together cover every hash it covered: nothing is orphaned.
                covered = segment.hash_range.start
                for child in sorted(segments[c].hash_range for c in segment.child_ids):
                    if child.start <= covered:
                        covered = max(covered, child.end + 1)
                assert covered > segment.hash_range.end, segment

    @invariant()
    def every_hash_is_routed_to_the_active_segment_holding_it(self) -> None:
        for hash_value in (0, 0x3FFF, 0x8000, 0xFFFF):
            segment = self.layout.find_active_segment(hash_value)
            assert segment.is_active and segment.hash_range.contains(hash_value)

    @invariant()
    def json_round_trips(self) -> None:
        assert SegmentLayout.from_json(self.layout.to_json()) == self.layout


LayoutMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=30,
                                           deadline=None)
TestLayoutMachine = LayoutMachine.TestCase
