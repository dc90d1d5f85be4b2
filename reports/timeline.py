"""The timeline pages: every operation as a bar from invoke to completion, one row per
process, coloured by outcome, as Jepsen draws them.

A page holds PAGE_SIZE operations in invoke order, so a page stays small however long the
run. A run with more than MAX_PAGES pages gets MAX_PAGES of them: the pages holding anomaly
examples first, then pages evenly spread through the run, and every page says which it is.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reports.history_view import HistoryView
from reports.templates import render

PAGE_SIZE = 1000
MAX_PAGES = 20
_MIN_WIDTH_PCT = 0.15


@dataclass(frozen=True)
class TimelinePages:
    """Which pages exist, so the report can link an event index to its page."""

    total: int
    written: tuple[int, ...]
    first_index: tuple[int, ...]
    """Invoke index of each page's first operation, for every page (written or not)."""

    def page_of(self, index: int) -> int | None:
        """The written page an event index falls in, if that page was written."""
        page = int(np.searchsorted(self.first_index, index, side="right"))
        return page if page in self.written else None


def page_file(page: int) -> str:
    return "timeline.html" if page == 1 else f"timeline-{page}.html"


def write_timeline(view: HistoryView, out_dir: Path, title: str,
                   example_indexes: list[int]) -> TimelinePages:
    """Write timeline.html (page 1) and the chosen further pages into `out_dir`."""
    for stale in out_dir.glob("timeline-*.html"):
        stale.unlink()
    ops = view.operations
    total = max(1, math.ceil(len(ops) / PAGE_SIZE))
    first_index = tuple(int(i) for i in ops["inv_index"].to_numpy()[::PAGE_SIZE]) or (0,)
    wanted = sorted({int(np.searchsorted(first_index, i, side="right")) for i in example_indexes})
    written = _choose_pages(total, [p for p in wanted if p >= 1][:MAX_PAGES - 1])
    pages = TimelinePages(total, written, first_index)
    sampled = len(written) < total
    for page in written:
        chunk = ops.iloc[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]
        values = view.column_at(chunk["inv_index"].to_numpy(), "value")
        html = render("timeline.html.jinja", title=title, page=page, pages=pages,
                      page_file=page_file, sampled=sampled, example_pages=set(wanted),
                      total_ops=len(ops), first_op=(page - 1) * PAGE_SIZE + 1,
                      last_op=(page - 1) * PAGE_SIZE + len(chunk), page_size=PAGE_SIZE,
                      rows=_rows(chunk, values))
        (out_dir / page_file(page)).write_text(html)
    return pages


def _choose_pages(total: int, wanted: list[int]) -> tuple[int, ...]:
    """Page 1, the wanted pages, then pages evenly spread through the run, MAX_PAGES in all."""
    chosen = {1, *wanted}
    spread = np.linspace(1, total, min(total, MAX_PAGES)).round().astype(int).tolist()
    for page in [*spread, *range(1, total + 1)]:
        if len(chosen) >= MAX_PAGES:
            break
        chosen.add(page)
    return tuple(sorted(chosen))


@dataclass(frozen=True)
class _Bar:
    left: float
    width: float
    outcome: str
    index: int
    text: str


def _rows(chunk: pd.DataFrame, values: list[Any]) -> list[tuple[str, list[_Bar]]]:
    if chunk.empty:
        return []
    start = float(chunk["inv_t"].min())
    end = float(np.nanmax(np.append(chunk["done_t"].to_numpy(), chunk["inv_t"].max())))
    span = max(end - start, 1e-9)
    rows: dict[str, list[_Bar]] = {}
    op: Any  # a row of `HistoryView.operations`, a named tuple of its columns
    for op, value in zip(chunk.itertuples(index=False), values):
        done = op.done_t if not pd.isna(op.done_t) else end
        left = 100 * (op.inv_t - start) / span
        width = max(100 * (done - op.inv_t) / span, _MIN_WIDTH_PCT)
        took = (f"{(op.done_t - op.inv_t) * 1000:.3f} ms" if not pd.isna(op.done_t)
                else "no completion")
        text = (f"#{op.inv_index} {op.f} {value if value is not None else ''} → {op.outcome}"
                f"{f' (#{op.done_index})' if op.done_index >= 0 else ''}, {took}, "
                f"invoked at {op.inv_t:.6f} s"
                + (f", cluster {op.cluster}" if isinstance(op.cluster, str) else ""))
        rows.setdefault(str(op.process), []).append(
            _Bar(left, min(width, 100 - left), str(op.outcome), int(op.inv_index), text))
    return sorted(rows.items(), key=lambda item: _process_order(item[0]))


def _process_order(name: str) -> tuple[int, str, int]:
    """Clients first in numeric order (p2 before p10), then nemesis, admin and the rest."""
    match = re.fullmatch(r"([a-z]+)(\d+)", name)
    return (0, match.group(1), int(match.group(2))) if match else (1, name, 0)
