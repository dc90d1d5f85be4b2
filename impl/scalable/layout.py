"""The segment DAG of a scalable topic (PIP-468 "SegmentLayout", "SegmentInfo").

A layout is an immutable snapshot: `split_segment`, `merge_segments` and `prune_segment`
return a new layout with the epoch one higher, so readers (producers routing keys, DAG
watch sessions, coordinators) can hold a layout without locks while the controller builds
the next one. The active segments always partition the hash space [0x0000, 0xFFFF]; sealed
segments stay in the DAG, linked both ways to their children, so consumers can walk from a
parent to its children during catch-up reads.

`to_metadata` / `from_metadata` are the `ScalableTopicMetadata` JSON of PIP-468's "Metadata
Store Schema", field names and nesting exactly as there.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from functools import cached_property
from types import MappingProxyType
from typing import Any

from impl.scalable.errors import (
    HashOutOfRange,
    InvalidLayout,
    SegmentNotActive,
    SegmentNotFound,
    SegmentNotPrunable,
    SegmentsNotAdjacent,
    SegmentTooSmall,
)
from impl.scalable.hashing import HASH_MAX, HASH_SPACE


class SegmentState(Enum):
    ACTIVE = "ACTIVE"
    SEALED = "SEALED"


@dataclass(frozen=True, order=True)
class HashRange:
    """An inclusive range `[start, end]` of key hashes."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.end <= HASH_MAX:
            raise InvalidLayout(f"hash range [{self.start}, {self.end}] is not within "
                                f"[0, {HASH_MAX}] with start <= end")

    def __str__(self) -> str:
        return f"[0x{self.start:04X}, 0x{self.end:04X}]"

    def contains(self, hash_value: int) -> bool:
        return self.start <= hash_value <= self.end

    def halves(self) -> tuple[HashRange, HashRange]:
        """The two halves a split creates: `[start, mid]` and `[mid + 1, end]`."""
        mid = (self.start + self.end) // 2
        return HashRange(self.start, mid), HashRange(mid + 1, self.end)

    def adjacent_to(self, other: HashRange) -> bool:
        return self.end + 1 == other.start or other.end + 1 == self.start

    def to_metadata(self) -> dict[str, int]:
        return {"start": self.start, "end": self.end}

    @classmethod
    def from_metadata(cls, value: Mapping[str, Any]) -> HashRange:
        return cls(_integer(value, "start"), _integer(value, "end"))


@dataclass(frozen=True)
class SegmentInfo:
    """One segment of the DAG. `sealed_at_epoch` is 0 while ACTIVE: sealing always comes
    with a split or merge, which raises the epoch above 0, so 0 cannot be a real value."""

    segment_id: int
    hash_range: HashRange
    state: SegmentState
    parent_ids: tuple[int, ...]
    child_ids: tuple[int, ...]
    created_at_epoch: int
    sealed_at_epoch: int = 0

    @classmethod
    def active(cls, segment_id: int, hash_range: HashRange, epoch: int,
               parent_ids: Iterable[int] = ()) -> SegmentInfo:
        return cls(segment_id, hash_range, SegmentState.ACTIVE, tuple(parent_ids), (), epoch)

    def sealed(self, child_ids: Iterable[int], epoch: int) -> SegmentInfo:
        """This segment sealed at `epoch`, pointing at the segments that replace it."""
        return replace(self, state=SegmentState.SEALED, child_ids=tuple(child_ids),
                       sealed_at_epoch=epoch)

    @property
    def is_active(self) -> bool:
        return self.state == SegmentState.ACTIVE

    @property
    def hash_start(self) -> int:
        return self.hash_range.start

    @property
    def hash_end(self) -> int:
        return self.hash_range.end

    def to_metadata(self) -> dict[str, Any]:
        return {
            "segmentId": self.segment_id,
            "hashRange": self.hash_range.to_metadata(),
            "state": self.state.value,
            "parentIds": list(self.parent_ids),
            "childIds": list(self.child_ids),
            "createdAtEpoch": self.created_at_epoch,
            "sealedAtEpoch": self.sealed_at_epoch,
        }

    @classmethod
    def from_metadata(cls, value: Mapping[str, Any]) -> SegmentInfo:
        try:
            state = SegmentState(value["state"])
            hash_range = HashRange.from_metadata(value["hashRange"])
            return cls(
                _integer(value, "segmentId"), hash_range, state,
                tuple(int(p) for p in value.get("parentIds") or ()),
                tuple(int(c) for c in value.get("childIds") or ()),
                _integer(value, "createdAtEpoch"), int(value.get("sealedAtEpoch", 0)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidLayout(f"segment {dict(value)!r}: {exc!r}") from None


@dataclass(frozen=True)
class Lineage:
    """Everything a segment descends from and everything that descends from it."""

    ancestors: frozenset[int]
    descendants: frozenset[int]


@dataclass(frozen=True)
class SegmentLayout:
    """An immutable, versioned snapshot of the segment DAG."""

    epoch: int
    next_segment_id: int
    segments: Mapping[int, SegmentInfo]
    """Every segment, active and sealed, by id (PIP-468 `allSegments`)."""
    properties: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def initial(cls, num_segments: int, properties: Mapping[str, str] | None = None
                ) -> SegmentLayout:
        """Epoch 0 with [0x0000, 0xFFFF] divided into `num_segments` near-equal ranges
        (PIP-468 "Creation"); ids 0..n-1 in range order."""
        if not 1 <= num_segments <= HASH_SPACE:
            raise InvalidLayout(f"a topic needs between 1 and {HASH_SPACE} initial segments, "
                                f"not {num_segments}")
        bounds = [i * HASH_SPACE // num_segments for i in range(num_segments + 1)]
        segments = [SegmentInfo.active(i, HashRange(bounds[i], bounds[i + 1] - 1), 0)
                     for i in range(num_segments)]
        return cls._of(0, num_segments, segments, properties or {})

    @classmethod
    def _of(cls, epoch: int, next_segment_id: int, segments: Iterable[SegmentInfo],
            properties: Mapping[str, str]) -> SegmentLayout:
        by_id = {s.segment_id: s for s in sorted(segments, key=lambda s: s.segment_id)}
        return cls(epoch, next_segment_id, MappingProxyType(by_id),
                   MappingProxyType(dict(properties)))

    # --- reads ---------------------------------------------------------------------------

    @cached_property
    def active_segments(self) -> tuple[SegmentInfo, ...]:
        """ACTIVE segments in hash-range order (PIP-468 `activeSegments`)."""
        return tuple(sorted((s for s in self.segments.values() if s.is_active),
                            key=lambda s: s.hash_range.start))

    @cached_property
    def _active_starts(self) -> list[int]:
        return [s.hash_range.start for s in self.active_segments]

    def segment(self, segment_id: int) -> SegmentInfo:
        try:
            return self.segments[segment_id]
        except KeyError:
            raise SegmentNotFound(segment_id) from None

    def find_active_segment(self, hash_value: int) -> SegmentInfo:
        """The active segment a key with this hash is routed to."""
        if not 0 <= hash_value <= HASH_MAX:
            raise HashOutOfRange(hash_value)
        index = bisect.bisect_right(self._active_starts, hash_value) - 1
        return self.active_segments[index]

    def lineage(self, segment_id: int) -> Lineage:
        """Ancestors and descendants, for walking the DAG during catch-up reads."""
        self.segment(segment_id)
        return Lineage(self._reachable(segment_id, lambda s: s.parent_ids),
                       self._reachable(segment_id, lambda s: s.child_ids))

    def _reachable(self, start: int, step: Any) -> frozenset[int]:
        found: set[int] = set()
        stack = list(step(self.segments[start]))
        while stack:
            segment_id = stack.pop()
            if segment_id not in found and segment_id in self.segments:
                found.add(segment_id)
                stack.extend(step(self.segments[segment_id]))
        return frozenset(found)

    # --- changes -------------------------------------------------------------------------

    def split_segment(self, segment_id: int) -> SegmentLayout:
        """Seal the active segment and add two children covering its halves."""
        parent = self._active(segment_id)
        if parent.hash_range.start == parent.hash_range.end:
            raise SegmentTooSmall(segment_id, str(parent.hash_range))
        epoch, first_id = self.epoch + 1, self.next_segment_id
        children = [SegmentInfo.active(first_id + i, half, epoch, (segment_id,))
                    for i, half in enumerate(parent.hash_range.halves())]
        return self._replace_with([parent], children)

    def merge_segments(self, first_id: int, second_id: int) -> SegmentLayout:
        """Seal two adjacent active segments and add one child covering both ranges."""
        first, second = self._active(first_id), self._active(second_id)
        if first_id == second_id or not first.hash_range.adjacent_to(second.hash_range):
            raise SegmentsNotAdjacent(first_id, second_id, str(first.hash_range),
                                      str(second.hash_range))
        low, high = sorted((first, second), key=lambda s: s.hash_range.start)
        merged = SegmentInfo.active(
            self.next_segment_id, HashRange(low.hash_range.start, high.hash_range.end),
            self.epoch + 1, (low.segment_id, high.segment_id))
        return self._replace_with([low, high], [merged])

    def prune_segment(self, segment_id: int) -> SegmentLayout:
        """Drop a sealed segment with no parents left (its data is gone): the DAG is pruned
        from its roots, so every remaining parent reference still resolves. Its children
        forget it as a parent. A layout change, so the epoch rises."""
        segment = self.segment(segment_id)
        if segment.is_active:
            raise SegmentNotPrunable(segment_id, "it is ACTIVE")
        if any(p in self.segments for p in segment.parent_ids):
            raise SegmentNotPrunable(segment_id, "a parent of it is still in the layout; "
                                                 "prune from the roots")
        remaining = []
        for other in self.segments.values():
            if other.segment_id == segment_id:
                continue
            if segment_id in other.parent_ids:
                other = replace(other, parent_ids=tuple(
                    p for p in other.parent_ids if p != segment_id))
            remaining.append(other)
        return SegmentLayout._of(self.epoch + 1, self.next_segment_id, remaining,
                                 self.properties)

    def with_properties(self, properties: Mapping[str, str]) -> SegmentLayout:
        """The same DAG and epoch with other topic properties (not a layout change)."""
        return SegmentLayout._of(self.epoch, self.next_segment_id, self.segments.values(),
                                 properties)

    def _active(self, segment_id: int) -> SegmentInfo:
        segment = self.segment(segment_id)
        if not segment.is_active:
            raise SegmentNotActive(segment_id, segment.state.value)
        return segment

    def _replace_with(self, parents: list[SegmentInfo], children: list[SegmentInfo]
                      ) -> SegmentLayout:
        epoch = self.epoch + 1
        child_ids = [c.segment_id for c in children]
        sealed = {p.segment_id: p.sealed(child_ids, epoch) for p in parents}
        segments = [sealed.get(s.segment_id, s) for s in self.segments.values()] + children
        return SegmentLayout._of(epoch, self.next_segment_id + len(children), segments,
                                 self.properties)

    # --- metadata ------------------------------------------------------------------------

    def to_metadata(self) -> dict[str, Any]:
        """The `ScalableTopicMetadata` document (segments keyed by decimal id)."""
        return {
            "epoch": self.epoch,
            "nextSegmentId": self.next_segment_id,
            "segments": {str(i): s.to_metadata() for i, s in self.segments.items()},
            "properties": dict(self.properties),
        }

    @classmethod
    def from_metadata(cls, value: Mapping[str, Any]) -> SegmentLayout:
        """Parse and check a `ScalableTopicMetadata` document; `InvalidLayout` says what is
        wrong with it."""
        if not isinstance(value, Mapping):
            raise InvalidLayout("the metadata is not a JSON object")
        segments = []
        for key, item in (value.get("segments") or {}).items():
            segment = SegmentInfo.from_metadata(item)
            if str(segment.segment_id) != key:
                raise InvalidLayout(f"segment keyed {key!r} has segmentId {segment.segment_id}")
            segments.append(segment)
        properties = value.get("properties") or {}
        layout = cls._of(_integer(value, "epoch"), _integer(value, "nextSegmentId"), segments,
                         {str(k): str(v) for k, v in properties.items()})
        layout._check()
        return layout

    def to_json(self) -> bytes:
        return json.dumps(self.to_metadata()).encode()

    @classmethod
    def from_json(cls, data: bytes) -> SegmentLayout:
        try:
            value = json.loads(data)
        except ValueError as exc:
            raise InvalidLayout(f"not JSON: {exc}") from None
        return cls.from_metadata(value)

    def _check(self) -> None:
        """The DAG's structural rules; a stored document that breaks one is refused rather
        than routed by."""
        expected_start = 0
        for segment in self.active_segments:
            if segment.hash_range.start != expected_start:
                raise InvalidLayout(f"active segments leave a gap or overlap at hash "
                                    f"{expected_start} (segment {segment.segment_id} starts "
                                    f"at {segment.hash_range.start})")
            expected_start = segment.hash_range.end + 1
        if expected_start != HASH_SPACE:
            raise InvalidLayout(f"active segments end at {expected_start - 1}, not {HASH_MAX}")
        for segment in self.segments.values():
            if segment.segment_id >= self.next_segment_id:
                raise InvalidLayout(f"segment {segment.segment_id} is not below nextSegmentId "
                                    f"{self.next_segment_id}")
            if segment.is_active != (not segment.child_ids and segment.sealed_at_epoch == 0):
                raise InvalidLayout(f"segment {segment.segment_id} is {segment.state.value} "
                                    f"with children {list(segment.child_ids)} and "
                                    f"sealedAtEpoch {segment.sealed_at_epoch}")
            for child in segment.child_ids:
                if segment.segment_id not in self._linked(child, "child").parent_ids:
                    raise InvalidLayout(f"segment {child} does not name its parent "
                                        f"{segment.segment_id}")
            for parent in segment.parent_ids:
                if segment.segment_id not in self._linked(parent, "parent").child_ids:
                    raise InvalidLayout(f"segment {parent} does not name its child "
                                        f"{segment.segment_id}")

    def _linked(self, segment_id: int, role: str) -> SegmentInfo:
        if segment_id not in self.segments:
            raise InvalidLayout(f"{role} segment {segment_id} is not in the layout")
        return self.segments[segment_id]


def _integer(value: Mapping[str, Any], field: str) -> int:
    try:
        number = value[field]
    except KeyError:
        raise InvalidLayout(f"field {field!r} is missing") from None
    if isinstance(number, bool) or not isinstance(number, int):
        raise InvalidLayout(f"field {field!r} is {number!r}, not an integer")
    return number
