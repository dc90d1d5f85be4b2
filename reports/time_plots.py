"""Plots over the run's time axis, computed from the history with numpy: throughput and
failures per cluster, latency per operation, consumer assignments, replication lag."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from reports.figures import (
    OUTCOME_COLOURS,
    Omitted,
    Plot,
    PlotInput,
    binned_quantiles,
    data_uri,
    every_nth,
    figure,
    shade_faults,
    time_bins,
)
from reports.history_view import HistoryView

MAX_PANELS = 6
RAW_POINTS = 20_000
NO_COMPLETED = "the history has no completed client operation"
MAX_ASSIGNMENT_ROWS = 40


def _cluster_names(column: pd.Series) -> pd.Series:
    return column.astype(str).where(column.notna(), "(no cluster)")


def throughput(run: PlotInput) -> Plot | Omitted:
    title = "Throughput and failures per cluster"
    view, faults, done = run.view, run.faults, run.view.completed_client_operations
    if done.empty:
        return Omitted(title, NO_COMPLETED)
    edges = time_bins(view.duration_s)
    width = edges[1] - edges[0]
    clusters = _cluster_names(done["cluster"])
    names = sorted(clusters.unique())[:MAX_PANELS]
    fig, axes = figure(len(names), height=2.6)
    for ax, cluster in zip(axes, names):
        mine = done[(clusters == cluster).to_numpy()]
        for f in sorted(mine["f"].astype(str).unique()):
            ok = mine[(mine["f"] == f).to_numpy() & (mine["outcome"] == "ok").to_numpy()]
            counts, _ = np.histogram(ok["done_t"], edges)
            ax.plot(edges[:-1], counts / width, lw=1, label=f"{f} ok")
        for outcome in ("fail", "info"):
            bad = mine[(mine["outcome"] == outcome).to_numpy()]
            if len(bad):
                counts, _ = np.histogram(bad["done_t"], edges)
                ax.bar(edges[:-1], counts / width, width=width, align="edge",
                       color=OUTCOME_COLOURS[outcome], alpha=0.7, label=f"{outcome} (any op)")
        shade_faults(ax, faults)
        ax.set_title(f"cluster {cluster}", fontsize=9)
        ax.set_ylabel("completions/s")
        ax.legend(fontsize=7, loc="upper right")
    axes[-1].set_xlabel("time since start (s)")
    caption = (f"Client completions per second in {width:g} s bins, by cluster (of the invoke); "
               "failures are fail and info completions of any operation.")
    if len(names) < clusters.nunique():
        caption += f" Showing {len(names)} of {clusters.nunique()} clusters."
    return Plot(title, caption, data_uri(fig))


def latency(run: PlotInput) -> Plot | Omitted:
    title = "Latency per operation"
    view, faults, done = run.view, run.faults, run.view.completed_client_operations
    if done.empty:
        return Omitted(title, NO_COMPLETED)
    edges = time_bins(view.duration_s)
    fs = sorted(done["f"].astype(str).unique())[:MAX_PANELS]
    fig, axes = figure(len(fs), height=2.8)
    for ax, f in zip(axes, fs):
        mine = done[(done["f"] == f).to_numpy()]
        ms = (mine["done_t"] - mine["inv_t"]).to_numpy() * 1000
        t = mine["inv_t"].to_numpy()
        outcome = mine["outcome"].astype(str).to_numpy()
        sample = every_nth(len(mine), RAW_POINTS)
        size = 3 if len(mine) > 2000 else 10  # sparse panels get visible points
        for name, colour in OUTCOME_COLOURS.items():
            chosen = sample[outcome[sample] == name]
            if len(chosen):
                ax.scatter(t[chosen], ms[chosen], s=size, color=colour, alpha=0.35, lw=0,
                           label=f"{name} ({int((outcome == name).sum())})")
        centres, quantiles = binned_quantiles(t, ms, edges, (0.5, 0.95, 0.99))
        for (q, line), style in zip(quantiles.items(), ("-", "--", ":")):
            ax.plot(centres, line, style, color="black", lw=1, label=f"p{int(q * 100)}")
        if ms.max() > 0 and ms.max() / max(np.median(ms), 1e-6) > 100:
            ax.set_yscale("log")
        shade_faults(ax, faults)
        ax.set_title(f"{f}", fontsize=9)
        ax.set_ylabel("latency (ms)")
        ax.legend(fontsize=7, loc="upper right", markerscale=3)
    axes[-1].set_xlabel("invoke time since start (s)")
    caption = (f"Each point is one operation (at most {RAW_POINTS:,} per panel, evenly "
               "sampled), coloured by outcome; lines are quantiles per time bin (bins with fewer "
               "than 5 operations left out).")
    return Plot(title, caption, data_uri(fig))


def consumer_assignments(run: PlotInput) -> Plot | Omitted:
    view, faults = run.view, run.faults
    title = "Consumer assignments over time"
    events = view.frame
    recvs = events[(events["f"] == "recv").to_numpy() & (events["type"] == "ok").to_numpy()]
    if recvs.empty:
        return Omitted(title, "the history has no recv events")
    consumer = recvs["consumer"].astype(str).where(recvs["consumer"].notna(),
                                                   recvs["process"].astype(str))
    source = ("segment " + recvs["segment"].astype("Int64").astype(str) + " in ").where(
        recvs["segment"].notna(), "") + "cluster " + _cluster_names(recvs["cluster"])
    rows = consumer + " ← " + source
    edges = time_bins(view.duration_s)
    width = edges[1] - edges[0]
    names = sorted(rows.unique(), key=_natural)
    shown = names[:MAX_ASSIGNMENT_ROWS]
    fig, axes = figure(1, height=max(2.0, 0.28 * len(shown) + 1.2))
    ax = axes[0]
    t = recvs["t"].to_numpy()
    labels = rows.to_numpy()
    for y, name in enumerate(shown):
        counts, _ = np.histogram(t[labels == name], edges)
        busy = np.flatnonzero(counts)
        ax.broken_barh([(edges[b], width) for b in busy], (y - 0.35, 0.7), color="#1565c0")
    ax.set_yticks(range(len(shown)), shown, fontsize=7)
    ax.set_ylim(-0.6, len(shown) - 0.4)
    ax.invert_yaxis()
    shade_faults(ax, faults)
    ax.set_xlabel("time since start (s)")
    caption = ("The history has no assignment events, so assignments are inferred from "
               f"recv events: a bar where a consumer received from a segment (or, without "
               f"a segment, a cluster) in a {width:g} s bin.")
    if len(shown) < len(names):
        caption += f" Showing {len(shown)} of {len(names)} consumer/segment pairs."
    return Plot(title, caption, data_uri(fig))


def replication_lag(run: PlotInput) -> Plot | Omitted:
    view, faults = run.view, run.faults
    title = "Replication lag"
    events = view.frame
    clusters = events["cluster"].dropna().unique()
    if len(clusters) < 2:
        return Omitted(title, "the history names fewer than two clusters, so nothing replicates")
    lag = _cross_cluster_lag(view)
    if lag.empty:
        return Omitted(title, "no message sent in one cluster was received in another")
    fig, axes = figure(1, height=3.2)
    ax = axes[0]
    sample = every_nth(len(lag), RAW_POINTS)
    for pair, group in lag.iloc[sample].groupby("pair"):
        ax.scatter(group["sent_t"], group["lag_ms"], s=3, alpha=0.4, lw=0, label=pair)
    edges = time_bins(view.duration_s)
    centres, quantiles = binned_quantiles(lag["sent_t"].to_numpy(), lag["lag_ms"].to_numpy(),
                                          edges, (0.99,))
    ax.plot(centres, quantiles[0.99], color="black", lw=1, label="p99")
    shade_faults(ax, faults)
    ax.set_xlabel("send acknowledged, time since start (s)")
    ax.set_ylabel("lag (ms)")
    ax.legend(fontsize=7, loc="upper right", markerscale=3)
    caption = ("Lag of a message is the time from its send's ok in its cluster to its first "
               "recv in another cluster (the history has no replicator events; this is what "
               "a consumer could observe).")
    return Plot(title, caption, data_uri(fig))


def _cross_cluster_lag(view: HistoryView) -> pd.DataFrame:
    """Per (value, receiving cluster): first recv time minus the send's ok time, for
    receiving clusters other than the sender's."""
    ops = view.operations
    sends = ops[(ops["f"] == "send").to_numpy() & (ops["outcome"] == "ok").to_numpy()]
    recvs = view.select(("recv",), ["index", "time", "type", "cluster", "value"])
    if sends.empty or recvs.empty:
        return pd.DataFrame(columns=["sent_t", "lag_ms", "pair"])
    values = view.column_at(sends["inv_index"].to_numpy(), "value")
    sent = pd.DataFrame({"value": values, "from": sends["cluster"].astype(str).to_numpy(),
                         "sent_t": sends["done_t"].to_numpy()})
    recvs = recvs[recvs["type"] == "ok"].groupby(["value", "cluster"], as_index=False)[["t"]].min()
    joined = recvs.merge(sent, on="value")
    joined = joined[joined["cluster"] != joined["from"]]
    return pd.DataFrame({"sent_t": joined["sent_t"],
                         "lag_ms": (joined["t"] - joined["sent_t"]) * 1000,
                         "pair": joined["from"] + " → " + joined["cluster"]}).sort_values("sent_t")


def _natural(label: str) -> list[object]:
    """Sort key that orders "segment 2" before "segment 10"."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", label)]
