"""Splits and merges as data: what an operation asks for, the change it plans against one
layout, and the record of a change in progress that lets a new leader finish it.

A plan is a pure function of the operation and the layout it starts from, so repeating it
against the same layout names the same child segments: that is what makes the controller's
steps idempotent across a leader failover.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum

from impl.scalable.errors import InvalidMetadata
from impl.scalable.layout import SegmentInfo, SegmentLayout


class OperationKind(Enum):
    SPLIT = "split"
    MERGE = "merge"


@dataclass(frozen=True)
class LayoutOperation:
    kind: OperationKind
    segment_ids: tuple[int, ...]

    @classmethod
    def split(cls, segment_id: int) -> LayoutOperation:
        return cls(OperationKind.SPLIT, (segment_id,))

    @classmethod
    def merge(cls, first_id: int, second_id: int) -> LayoutOperation:
        return cls(OperationKind.MERGE, (first_id, second_id))

    def __str__(self) -> str:
        ids = " and ".join(map(str, self.segment_ids))
        return f"{self.kind.value} of segment{'s' if len(self.segment_ids) > 1 else ''} {ids}"

    def apply(self, layout: SegmentLayout) -> SegmentLayout:
        """The layout after this operation; raises the layout's domain errors."""
        if self.kind == OperationKind.SPLIT:
            return layout.split_segment(*self.segment_ids)
        return layout.merge_segments(*self.segment_ids)


@dataclass(frozen=True)
class LayoutChange:
    """One operation planned against `base`."""

    operation: LayoutOperation
    base: SegmentLayout
    result: SegmentLayout

    @classmethod
    def plan(cls, operation: LayoutOperation, base: SegmentLayout) -> LayoutChange:
        return cls(operation, base, operation.apply(base))

    @property
    def parents(self) -> tuple[SegmentInfo, ...]:
        """In the order the operation names them (merge step 3 terminates in this order)."""
        return tuple(self.base.segment(i) for i in self.operation.segment_ids)

    @property
    def children(self) -> tuple[SegmentInfo, ...]:
        return tuple(s for i, s in self.result.segments.items() if i not in self.base.segments)


@dataclass(frozen=True)
class PendingChange:
    """Written before a change's first step and deleted after its last. A leader that
    finds one finishes the operation (or, when the layout already shows it, just forgets
    it); `children` lets it delete child topics a superseded plan created."""

    operation: LayoutOperation
    base_epoch: int
    children: tuple[SegmentInfo, ...]

    @classmethod
    def of(cls, change: LayoutChange) -> PendingChange:
        return cls(change.operation, change.base.epoch, change.children)

    def to_bytes(self) -> bytes:
        return json.dumps({
            "operation": self.operation.kind.value,
            "segmentIds": list(self.operation.segment_ids),
            "baseEpoch": self.base_epoch,
            "children": [c.to_metadata() for c in self.children],
        }).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> PendingChange:
        try:
            value = json.loads(data)
            operation = LayoutOperation(OperationKind(value["operation"]),
                                        tuple(int(i) for i in value["segmentIds"]))
            return cls(operation, int(value["baseEpoch"]),
                       tuple(SegmentInfo.from_metadata(c) for c in value["children"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidMetadata("pending layout change", f"{data[:200]!r}: {exc!r}") from None
