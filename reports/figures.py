"""What every plot shares: figures built without pyplot (which would keep every figure
alive in a long process), PNG bytes embedded as data URIs so a report is one offline file,
fault intervals shaded and labelled, and time bins sized to the run."""

from __future__ import annotations

import base64
import io
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from history.faults import fault_colour
from reports.history_view import HistoryView

OUTCOME_COLOURS = {"ok": "#2e7d32", "fail": "#c62828", "info": "#ef6c00", "pending": "#757575"}
TARGET_BINS = 150
MIN_PER_QUANTILE = 5


@dataclass(frozen=True)
class Plot:
    title: str
    caption: str
    uri: str


@dataclass(frozen=True)
class Omitted:
    """A plot the history has no data for: shown as one line, never drawn empty."""

    title: str
    reason: str


@dataclass(frozen=True)
class PlotInput:
    """What every plot may draw from."""

    view: HistoryView
    faults: list[Fault]
    stats: dict[str, Any]
    """`stats` of results.json."""


@dataclass(frozen=True)
class Fault:
    """A nemesis fault interval, as `starquake check` recorded it in `stats.nemesis`."""

    f: str
    start_s: float
    end_s: float
    label: str
    availability: float | None
    recovery_ms: float | None
    invoked: int
    """Client operations invoked in the interval, whatever their outcome."""

    @classmethod
    def from_stats(cls, entry: dict[str, Any]) -> Fault:
        return cls(entry["f"], entry["start_ms"] / 1000, entry["end_ms"] / 1000,
                   _fault_label(entry), entry.get("availability"), entry.get("recovery_ms"),
                   sum((entry.get("operations") or {}).values()))


def _fault_label(entry: dict[str, Any]) -> str:
    detail = entry.get("detail")
    if isinstance(detail, dict):
        targets = detail.get("targets") or detail.get("nodes") or detail.get("node")
        if targets:
            shown = ",".join(map(str, targets)) if isinstance(targets, list) else str(targets)
            return f"{entry['f']} {shown[:24]}"
    name: str = entry["f"]
    return name


def figure(rows: int = 1, height: float = 3.0, width: float = 10.0) -> tuple[Figure, list[Axes]]:
    """Panels stacked on one shared time axis."""
    fig = Figure(figsize=(width, height * rows), layout="constrained")
    axes = fig.subplots(rows, 1, squeeze=False, sharex=True)[:, 0]
    for ax in axes:
        ax.ticklabel_format(useOffset=False, style="plain", axis="y")
    return fig, list(axes)


def data_uri(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def shade_faults(ax: Axes, faults: list[Fault], label: bool = True) -> None:
    """Fault intervals as shaded spans, instantaneous faults as dashed lines, each
    labelled at the top of the axes."""
    for fault in faults:
        if fault.end_s > fault.start_s:
            ax.axvspan(fault.start_s, fault.end_s, color=fault_colour(fault.f), alpha=0.18,
                       lw=0)
        else:
            ax.axvline(fault.start_s, color=fault_colour(fault.f), ls="--", lw=1)
        if label:
            ax.annotate(fault.label, (fault.start_s, 1), xycoords=("data", "axes fraction"),
                        xytext=(2, -2), textcoords="offset points", va="top", fontsize=7,
                        color="#8d6e00", rotation=90)


def time_bins(duration_s: float) -> np.ndarray:
    """Bin edges in seconds: a 1-2-5 width giving about TARGET_BINS bins."""
    if duration_s <= 0:
        return np.array([0.0, 1e-6])
    raw = duration_s / TARGET_BINS
    power = 10 ** math.floor(math.log10(raw))
    width = next(step * power for step in (1, 2, 5, 10) if step * power >= raw)
    return np.arange(0, duration_s + width, width)


def every_nth(count: int, limit: int) -> np.ndarray:
    """Evenly spread positions, at most `limit` of `count`: a deterministic sample."""
    if count <= limit:
        return np.arange(count)
    return np.linspace(0, count - 1, limit).astype(np.int64)


def binned_quantiles(t: np.ndarray, values: np.ndarray, edges: np.ndarray,
                     quantiles: tuple[float, ...]) -> tuple[np.ndarray, dict[float, np.ndarray]]:
    """Quantiles of `values` per time bin, at bin centres; NaN (a gap in the line, not a
    line across it) where a bin has fewer than MIN_PER_QUANTILE values."""
    bins = np.clip(np.digitize(t, edges) - 1, 0, len(edges) - 2)
    grouped = pd.Series(values).groupby(bins)
    table = (grouped.quantile(np.array(quantiles, dtype=np.float64)).unstack()
             .reindex(range(len(edges) - 1)))
    sparse = grouped.size().reindex(range(len(edges) - 1), fill_value=0) < MIN_PER_QUANTILE
    table[sparse.to_numpy()] = np.nan
    centres = edges[:-1] + (edges[1] - edges[0]) / 2
    return centres, {q: table[q].to_numpy() for q in quantiles}
