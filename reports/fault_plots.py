"""Plots of how the system met its faults, from the statistics `starquake check` wrote:
per-failover duplicates and window against the bound, and availability and recovery time
around each nemesis fault (with the client operations around it, from the history)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from reports.figures import (
    OUTCOME_COLOURS,
    Fault,
    Omitted,
    Plot,
    PlotInput,
    data_uri,
    figure,
    shade_faults,
    time_bins,
)

MAX_FAULT_PANELS = 8
_AROUND_BINS = 40


def failover_windows(run: PlotInput) -> Plot | Omitted:
    stats = run.stats
    title = "Failovers: duplicates and window against the bound"
    windows = stats.get("failover_windows") or []
    if not windows:
        failovers = stats.get("failovers", 0)
        reason = ("the history has no failover" if not failovers else
                  f"{failovers} failover(s), none followed by a duplicate delivery")
        return Omitted(title, reason)
    fig, axes = figure(2, height=2.6)
    labels = [f"{w['subscription']} {w['from']}→{w['to']}\n"
              f"@{w['time_ms'] / 1000:.1f} s #{w['index']}"
              for w in windows]
    x = np.arange(len(windows))
    over = [w["window_ms"] > w["bound_ms"] for w in windows]
    axes[0].bar(x, [w["window_ms"] for w in windows], width=0.5,
                color=[OUTCOME_COLOURS["fail"] if o else OUTCOME_COLOURS["ok"] for o in over])
    axes[0].hlines([w["bound_ms"] for w in windows], x - 0.35, x + 0.35, color="black",
                   lw=2, label="bound", zorder=3)
    axes[0].set_ylabel("window (ms)")
    axes[0].legend(fontsize=7)
    axes[1].bar(x, [w["duplicates"] for w in windows], width=0.5, color="#5c6bc0")
    axes[1].set_ylabel("duplicates")
    axes[1].set_xlim(-0.75, max(len(windows), 4) - 0.25)
    for ax in axes:
        ax.set_xticks(x, labels, fontsize=7)
    caption = ("Per failover that caused duplicates: the window (failover invoke minus the "
               "earliest ack in the old cluster of a value delivered again) in red when over "
               "the bound (black mark), and how many values were delivered again.")
    return Plot(title, caption, data_uri(fig))


def availability(run: PlotInput) -> Plot | Omitted:
    view, faults = run.view, run.faults
    title = "Availability and recovery around each fault"
    if not faults:
        return Omitted(title, "the history has no nemesis fault")
    shown = faults[:MAX_FAULT_PANELS]
    rows = (len(shown) + 1) // 2
    fig = Figure(figsize=(10, 2.8 + 2.2 * rows), layout="constrained")
    grid = fig.add_gridspec(1 + rows, 2)
    names = [f"{n + 1}. {fault.label}" for n, fault in enumerate(shown)]
    bars = fig.add_subplot(grid[0, 0])
    bars.barh(names, [100 * (f.availability or 0) for f in shown], color="#43a047")
    bars.set_xlim(0, 100)
    bars.set_xlabel("availability in the interval (% ok)")
    bars.invert_yaxis()
    recovery = fig.add_subplot(grid[0, 1])
    recovery.barh(names, [f.recovery_ms or 0 for f in shown], color="#fb8c00")
    for y, fault in enumerate(shown):
        if fault.recovery_ms is None:
            recovery.text(0, y, " no acknowledged send after", va="center", fontsize=7)
    recovery.set_xlabel("recovery: heal to first acknowledged send (ms)")
    recovery.invert_yaxis()
    recovery.set_yticks([])
    for y, fault in enumerate(shown):
        bars.text(0, y, f" {_invoked(fault)}", va="center", fontsize=7)
    bin_width = float(np.diff(time_bins(view.duration_s)[:2])[0])
    ops = view.operations
    clients = ops[ops["client"].to_numpy()]
    for n, fault in enumerate(shown):
        _around(fig.add_subplot(grid[1 + n // 2, n % 2]), clients, fault, names[n], bin_width)
    caption = ("Top: share of client operations invoked in each fault interval that "
               "completed ok (each bar says how many were invoked), and time from the "
               "interval's end to the first acknowledged send. "
               "Below: client completions by outcome around each fault (interval shaded).")
    if len(shown) < len(faults):
        caption += f" Showing {len(shown)} of {len(faults)} faults."
    return Plot(title, caption, data_uri(fig))


def _invoked(fault: Fault) -> str:
    """What the availability bar stands on: how many operations were invoked, for an
    interval (a fault that lasts); an instantaneous fault has none to invoke them in."""
    if fault.end_s <= fault.start_s:
        return "instantaneous: no interval"
    if not fault.invoked:
        return "no client operation invoked in it"
    return f"{fault.invoked} client operations invoked in it"


def _around(ax: Axes, clients: pd.DataFrame, fault: Fault, name: str, bin_width: float) -> None:
    width = max(bin_width, (fault.end_s - fault.start_s) / _AROUND_BINS)
    pad = max((fault.end_s - fault.start_s) * 0.5, 10 * width)
    edges = np.arange(fault.start_s - pad, fault.end_s + pad + width, width)
    done_t = clients["done_t"].to_numpy()
    outcome = clients["outcome"].astype(str).to_numpy()
    for name_, colour in OUTCOME_COLOURS.items():
        counts, _ = np.histogram(done_t[outcome == name_], edges)
        if counts.any():
            ax.plot(edges[:-1] + width / 2, counts / width, color=colour, lw=1, label=name_)
    shade_faults(ax, [fault], label=False)
    if fault.recovery_ms is not None:
        ax.axvline(fault.end_s + fault.recovery_ms / 1000, color="#fb8c00", lw=1)
    ax.set_title(name, fontsize=8)
    ax.set_ylabel("ops/s", fontsize=7)
    ax.tick_params(labelsize=7)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=6, loc="upper right")
