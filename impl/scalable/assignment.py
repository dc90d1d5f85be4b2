"""Which segments a subscription's consumers read, and who reads which: pure functions, so
the rule is one place that the coordinator applies and tests can state.

PIP-468 "Rebalancing": segments sorted by hash-range start, consumers sorted by name,
dealt round-robin. For an ordered (stream) subscription the dealt segments are PIP-460's
frontier rather than simply the active ones: a sealed segment stays assigned until the
subscription has drained it, and a segment is held back until every ancestor is drained,
so a key's messages in a parent are delivered before its messages in a child.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from impl.scalable.layout import SegmentInfo, SegmentLayout

DrainedTest = Callable[[SegmentInfo], bool]


def assignable_segments(layout: SegmentLayout, *, ordered: bool, drained: DrainedTest
                        ) -> list[SegmentInfo]:
    """The segments to deal out, in hash-range order. A sealed segment counts as drained
    once `drained` says so and its parents count as drained: an empty segment is at its
    end without ever being read, and were that enough, its children would be dealt while
    a grandparent still held a key's earlier messages. `drained` is asked about sealed
    segments only, and only once their parents are drained (an active segment can still
    take writes, so it is never drained); a parent pruned from the layout counts as
    drained."""
    if not ordered:
        return list(layout.active_segments)
    done: set[int] = set()

    def is_drained(segment_id: int) -> bool:
        return segment_id in done or segment_id not in layout.segments

    frontier = []
    # Children are made after their parents, with higher ids: parents are decided first.
    for segment in sorted(layout.segments.values(), key=lambda s: s.segment_id):
        if not all(map(is_drained, segment.parent_ids)):
            continue
        if not segment.is_active and drained(segment):
            done.add(segment.segment_id)
        else:
            frontier.append(segment)
    return sorted(frontier, key=lambda s: (s.hash_range.start, s.segment_id))


def withheld_segments(layout: SegmentLayout, assignable: Iterable[SegmentInfo]
                      ) -> list[SegmentInfo]:
    """Active segments an ordered subscription may not read yet (a parent is undrained)."""
    dealt = {s.segment_id for s in assignable}
    return [s for s in layout.active_segments if s.segment_id not in dealt]


def round_robin(segments: Sequence[SegmentInfo], consumer_names: Iterable[str]
                ) -> dict[str, tuple[SegmentInfo, ...]]:
    """Segment i goes to the (i mod n)-th consumer by name; every consumer gets an entry,
    possibly empty. No consumers: nobody is assigned anything."""
    names = sorted(consumer_names)
    dealt: dict[str, list[SegmentInfo]] = {name: [] for name in names}
    if not names:
        return {}
    for index, segment in enumerate(segments):
        dealt[names[index % len(names)]].append(segment)
    return {name: tuple(segments_of) for name, segments_of in dealt.items()}
