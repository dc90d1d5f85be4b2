"""The history as a report needs it: a few columns as arrays, paired operations, and the
events around chosen indexes, all read from Parquet so that a multi-million-event history
never becomes a list of Python objects.

A JSON Lines history is validated and converted to `history.parquet` beside it the same
way `starquake check` does (and that file is reused while it is newer), so a torn last line
is dropped here exactly as the checkers dropped it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from history.reader import to_parquet
from history.schema import FIELDS, OBSERVATIONS

NOT_CLIENTS = frozenset({"nemesis", "admin", "observer", "harness"})
_COLUMNS = ["index", "time", "process", "type", "f", "cluster", "consumer", "segment"]
_CATEGORIES = ("process", "type", "f", "cluster", "consumer")


@dataclass(frozen=True)
class EventBlock:
    """Consecutive events around one or more proving events."""

    events: list[dict[str, Any]]
    proving: frozenset[int]


class HistoryView:
    """Read-only access to one run's history, each part loaded once and on demand."""

    def __init__(self, history: Path) -> None:
        prepared = to_parquet(history)
        self.source = prepared.source
        self.parquet = prepared.parquet
        self.truncated_tail = prepared.truncated_tail
        self._file = pq.ParquetFile(self.parquet)
        self.events = self._file.metadata.num_rows

    @cached_property
    def frame(self) -> pd.DataFrame:
        """Every event, the few columns plots need; strings as categories."""
        groups = [self._row_group(g, tuple(_COLUMNS)) for g in range(self._file.num_row_groups)]
        empty = pa.schema([(c, FIELDS[c][0]) for c in _COLUMNS]).empty_table()
        frame: pd.DataFrame = pa.concat_tables(groups or [empty]).to_pandas()
        for name in _CATEGORIES:
            frame[name] = frame[name].astype("category")
        frame["t"] = frame["time"] / 1e9  # seconds since the run started
        return frame

    @property
    def duration_s(self) -> float:
        return float(self.frame["t"].iloc[-1]) if len(self.frame) else 0.0

    @cached_property
    def operations(self) -> pd.DataFrame:
        """One row per invoke, with its completion: the process's next non-observation
        event (a process has one operation outstanding). Columns: process, f, cluster,
        inv_index, inv_t, done_index, done_t, outcome (`pending` without completion),
        client (a client process rather than nemesis, admin, observer or harness)."""
        events = self.frame
        observation = events["f"].isin(list(OBSERVATIONS)) & (events["type"] == "ok")
        ops = events[~observation.to_numpy()]
        order = np.argsort(ops["process"].cat.codes.to_numpy(), kind="stable")
        ops = ops.iloc[order].reset_index(drop=True)
        process = ops["process"].cat.codes.to_numpy()
        kind = ops["type"].astype(str).to_numpy()
        following = np.append(process[1:] == process[:-1], False)
        next_kind = np.append(kind[1:], "invoke")
        invokes = np.flatnonzero(kind == "invoke")
        completed = following[invokes] & (next_kind[invokes] != "invoke")
        done = invokes + 1
        done_row = np.minimum(done, len(ops) - 1)  # in range; used only where completed
        inv = ops.iloc[invokes]
        result = pd.DataFrame({
            "process": inv["process"].to_numpy(),
            "f": inv["f"].to_numpy(),
            "cluster": inv["cluster"].to_numpy(),
            "inv_index": inv["index"].to_numpy(),
            "inv_t": inv["t"].to_numpy(),
            "done_index": np.where(completed, ops["index"].to_numpy()[done_row], -1),
            "done_t": np.where(completed, ops["t"].to_numpy()[done_row], np.nan),
            "outcome": np.where(completed, next_kind[invokes], "pending"),
        })
        for name in ("process", "f", "cluster", "outcome"):
            result[name] = result[name].astype("category")
        result["client"] = ~result["process"].astype(str).isin(NOT_CLIENTS)
        return result.sort_values("inv_index", kind="stable").reset_index(drop=True)

    @cached_property
    def completed_client_operations(self) -> pd.DataFrame:
        ops = self.operations
        return ops[ops["client"].to_numpy() & ops["done_t"].notna().to_numpy()]

    def select(self, fs: tuple[str, ...], columns: list[str] | None = None) -> pd.DataFrame:
        """The events of the named operations (small by construction: layouts, splits,
        nemesis operations), with every column unless `columns` names some."""
        rows = np.flatnonzero(self.frame["f"].isin(list(fs)).to_numpy())
        frame = self._take(rows, columns).to_pandas() if len(rows) else pd.DataFrame(
            columns=columns or list(FIELDS))
        if "time" in frame:
            frame["t"] = frame["time"] / 1e9
        return frame

    def blocks_around(self, indexes: list[int], context: int) -> list[EventBlock]:
        """The events from `context` before to `context` after each index, overlapping
        ranges merged, read only from the row groups that hold them."""
        positions = self._rows_of(indexes)
        if not len(positions):
            return []
        ranges: list[list[int]] = []
        for row in sorted(set(positions.tolist())):
            start, end = max(0, row - context), min(self.events - 1, row + context)
            if ranges and start <= ranges[-1][1] + 1:
                ranges[-1][1] = max(ranges[-1][1], end)
            else:
                ranges.append([start, end])
        rows = np.concatenate([np.arange(a, b + 1) for a, b in ranges])
        table = self._take(rows)
        events = [{k: v for k, v in e.items() if v is not None} for e in table.to_pylist()]
        wanted = frozenset(indexes)
        blocks, offset = [], 0
        for a, b in ranges:
            block = events[offset:offset + b - a + 1]
            offset += b - a + 1
            blocks.append(EventBlock(block, frozenset(e["index"] for e in block) & wanted))
        return blocks

    def column_at(self, indexes: np.ndarray, column: str) -> list[Any]:
        """One column's values at the given event indexes, in ascending index order."""
        if not len(indexes):
            return []
        values: list[Any] = (self._take(self._rows_of(list(indexes)), [column])
                             .column(column).to_pylist())
        return values

    def _rows_of(self, indexes: list[int]) -> np.ndarray:
        """Row numbers of event indexes that exist (indexes need not equal row numbers)."""
        all_indexes = self.frame["index"].to_numpy()
        wanted = np.asarray(sorted(set(indexes)), dtype=np.int64)
        rows = np.searchsorted(all_indexes, wanted)
        rows = rows[rows < len(all_indexes)]
        return rows[all_indexes[rows] == wanted[:len(rows)]] if len(rows) else rows

    def _take(self, rows: np.ndarray, columns: list[str] | None = None) -> pa.Table:
        """Rows by number (ascending), reading only the row groups that hold them."""
        metadata = self._file.metadata
        starts = np.cumsum([0] + [metadata.row_group(g).num_rows
                                  for g in range(metadata.num_row_groups)])
        groups = np.searchsorted(starts, rows, side="right") - 1
        parts = []
        for group in np.unique(groups):
            table = self._row_group(int(group), tuple(columns) if columns else None)
            parts.append(table.take(pa.array(rows[groups == group] - starts[group])))
        return pa.concat_tables(parts)

    # Bounded, and a view lives only as long as the report that reads it.
    @lru_cache(maxsize=4)  # noqa: B019
    def _row_group(self, group: int, columns: tuple[str, ...] | None) -> pa.Table:
        """Cached: a report looks up many examples, often in the same row group. Optional
        columns a Parquet history leaves out come back as nulls."""
        present = self._file.schema_arrow.names
        wanted = list(columns) if columns else present
        table = self._file.read_row_group(group, columns=[c for c in wanted if c in present])
        for name in wanted:
            if name not in present:
                table = table.append_column(name, pa.nulls(table.num_rows, FIELDS[name][0]))
        return table.select(wanted)
