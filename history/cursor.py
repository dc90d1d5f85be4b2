"""What a `cursor` observation says (docs/history.md): a subscription's durable cursor as
one admin read saw it, and whether it holds a position as acknowledged. The harness writes
these readings and settles acks by them; the checkers read them back. Both must agree on
what "covered" means, so it is defined once, here."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

Position = tuple[int, int]

_POSITION = re.compile(r"(-?\d+):(-?\d+)")
_RANGE = re.compile(r"\((-?\d+):(-?\d+)\.\.(-?\d+):(-?\d+)\]")


def parse_position(text: str | None) -> Position | None:
    """`ledgerId:entryId` (a batch index after it is ignored: a cursor acknowledges
    entries)."""
    found = _POSITION.match(text or "")
    return (int(found[1]), int(found[2])) if found else None


def parse_ranges(text: str | None) -> list[tuple[Position, Position]]:
    """Pulsar's `individuallyDeletedMessages`, `[(3:5..3:7], ...]`: each range excludes
    its start and includes its end."""
    return [((int(a), int(b)), (int(c), int(d)))
            for a, b, c, d in _RANGE.findall(text or "")]


def position_text(position: Position) -> str:
    return f"{position[0]}:{position[1]}"


@dataclass(frozen=True)
class CursorReading:
    """One subscription's cursor: its mark-delete position, the ranges acknowledged above
    it, the backlog, how many consumers are connected and how many messages are out at
    them unacknowledged."""

    mark_delete: Position | None
    individually_deleted: tuple[tuple[Position, Position], ...]
    backlog: int
    consumers: int
    unacked: int

    def covers(self, position: Position) -> bool:
        """Whether the subscription holds `position` as acknowledged."""
        if self.mark_delete is not None and position <= self.mark_delete:
            return True
        return any(start < position <= end for start, end in self.individually_deleted)

    def covers_through(self, position: Position) -> bool:
        """Whether the subscription holds every position up to `position` as acknowledged:
        what a cumulative acknowledgement of it promises."""
        return self.mark_delete is not None and position <= self.mark_delete

    def detail(self) -> dict[str, Any]:
        """The observation's `detail` (its `position` is the mark-delete position)."""
        return {"individually_deleted": [[position_text(a), position_text(b)]
                                         for a, b in self.individually_deleted],
                "backlog": self.backlog, "consumers": self.consumers, "unacked": self.unacked}

    @classmethod
    def observed(cls, position: str | None, detail: dict[str, Any]) -> CursorReading:
        """A reading back from its observation's `position` and `detail`; what is missing
        or malformed reads as nothing acknowledged, no backlog, no consumer."""
        ranges = []
        for pair in detail.get("individually_deleted") or []:
            if isinstance(pair, list) and len(pair) == 2:
                start, end = parse_position(str(pair[0])), parse_position(str(pair[1]))
                if start is not None and end is not None:
                    ranges.append((start, end))
        return cls(parse_position(position), tuple(ranges), count_in(detail, "backlog"),
                   count_in(detail, "consumers"), count_in(detail, "unacked"))


def count_in(detail: dict[str, Any], name: str) -> int:
    """One of a reading's counts (`backlog`, `consumers`, `unacked`); 0 when missing or
    not an integer."""
    value = detail.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
