"""The rows of the paired files that the checkers read, each defined once.

The Python workers read a view's rows from the files for the finders that shuffle Arrow
tables (`View.table`, see `checkers.partitions`). A view is only a conjunction of
equalities and a list of columns, each the first non-null of some file columns; anything
cleverer is computed once, by the pairing pass, as a column.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import reduce

import pyarrow as pa
import pyarrow.compute as pc

OPERATIONS_FILE = "operations.parquet"
"""One row per invoke, its completion folded in (`checkers.pairing`)."""
OBSERVATIONS_FILE = "observations.parquet"
"""Every event that is not a step of an operation, as recorded."""

Source = tuple[str | int, ...]
"""A view's column: the first non-null of these file columns (an int: that constant)."""


@dataclass(frozen=True)
class View:
    file: str
    """The paired file (`checkers.pairing`) the rows come from."""
    where: Mapping[str, str]
    """Column -> text it must equal; a null equals nothing."""
    columns: Mapping[str, Source]

    def reads(self, names: list[str] | None = None) -> list[str]:
        """The file's columns that this view's columns (or only `names`) need."""
        wanted = [self.columns[name] for name in names or self.columns]
        found = [*self.where, *(s for source in wanted for s in source if isinstance(s, str))]
        return list(dict.fromkeys(found))

    def table(self, rows: pa.Table, names: list[str] | None = None) -> pa.Table:
        """The view (or only its columns `names`) of the file's rows in Arrow."""
        wanted = reduce(pc.and_, [pc.equal(rows[c], text) for c, text in self.where.items()])
        rows = rows.filter(wanted)

        def column(source: Source) -> pa.ChunkedArray:
            first = rows[source[0]]
            if len(source) == 1:
                return first
            return pc.coalesce(first, *[rows[s] if isinstance(s, str)
                                        else pa.scalar(s, first.type) for s in source[1:]])

        return pa.table({name: column(self.columns[name]) for name in names or self.columns})


def _same(*names: str) -> dict[str, Source]:
    return {name: (name,) for name in names}


SENDS = View(OPERATIONS_FILE, {"f": "send"}, {
    **_same("run", "process", "topic", "cluster", "key", "key_hash", "value"),
    "outcome": ("done_type",), "inv_index": ("index",), "inv_time": ("time",),
    **_same("done_index", "done_time"),
    # Where the message was written: as the completion says, else as the invoke asked.
    "segment": ("done_segment", "segment"), "position": ("done_position", "position")})
"""Every send, with its outcome (`done_type`: ok, fail, info, or null if it never ended)."""

ACKS = View(OPERATIONS_FILE, {"f": "ack", "done_type": "ok"}, {
    **_same("run", "topic", "subscription", "cluster", "value", "cumulative"),
    "ack_index": ("done_index",), "ack_time": ("done_time",),
    "position": ("position", "done_position")})
"""Acks completed `ok`, cumulative or not: their moment is their completion's. `position`
is the acknowledged delivery's, when the history names it (**starquake** does)."""

ACK_INVOKES = View(OPERATIONS_FILE, {"f": "ack"}, {
    **_same("run", "topic", "subscription", "cluster", "value"),
    "outcome": ("done_type",), "inv_index": ("index",),
    "position": ("position", "done_position")})
"""Every ack, with its outcome (null if it never ended): `ack-unapplied` looks at those
that did not complete `ok`."""

RECVS = View(OBSERVATIONS_FILE, {"f": "recv", "type": "ok"}, {
    **_same("run", "index", "time", "topic", "subscription", "consumer", "cluster", "value"),
    "seg": ("segment", -1), "position": ("position",)})
"""Deliveries; `seg` is -1 when the history names no segment."""
