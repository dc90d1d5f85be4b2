"""Figures the report plots beside the verdict: what happened, how fast, and how the
system behaved in each fault interval. Every figure is aggregated by Spark's workers in
one pass (`checkers.aggregates`); only the aggregates (per second, per interval, per
failover) reach the driver."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from checkers.aggregates import INTERVALS, QUANTILES, aggregates
from checkers.duplicates import judged_failovers
from checkers.frames import HistoryFrames, closing_op
from history.faults import HEAL_OPS, heal_of

_MS = 1_000_000

# One run's statistics, as `results.json` holds them under "stats".
RunStats = dict[str, Any]


@dataclass(frozen=True)
class FaultInterval:
    run: str
    f: str
    start: int
    end: int | None
    start_index: int
    detail: Any


def run_stats(frames: HistoryFrames) -> tuple[dict[str, RunStats], dict[str, int]]:
    """Statistics for every run, keyed by run, and per run the acks that judged failovers
    were measured against (`duplicate-window`'s `acks_judged`): all from one job of
    partial aggregates (`checkers.aggregates`). (The failovers' windows are measured with
    the anomalies, `checkers.failover_windows`.)"""
    stats: dict[str, RunStats] = {run: {"operations": [], "latency": [], "throughput": [],
                                    "nemesis": [], "failover_windows": []} for run in frames.runs}
    intervals = _fault_intervals(frames)
    table = pa.table({"run": [i.run for i in intervals],
                      "interval": list(range(len(intervals))),
                      "start": [i.start for i in intervals], "end": [i.end for i in intervals]},
                     schema=INTERVALS)
    rows = aggregates(frames, table, frames.failover_table(judged_failovers(frames)[0]))
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_kind[row["kind"]].append(row)
    history_end, last_send_ok = _operation_counts(by_kind["count"], stats)
    _latency(by_kind["latency"], stats)
    _throughput(by_kind["throughput"], stats)
    _nemesis(intervals, by_kind, history_end, last_send_ok, stats)
    return stats, {row["run"]: row["count"] for row in by_kind["failover-acks"]}


def _operation_counts(rows: list[dict[str, Any]],
                      stats: dict[str, RunStats]) -> tuple[dict[str, int], dict[str, int]]:
    """Counts by operation and outcome; returns each run's last event time, and the
    completion of its last acknowledged send."""
    history_end: dict[str, int] = {}
    last_send_ok: dict[str, int] = {}
    for row in sorted(rows, key=lambda r: (r["run"], r["f"], r["outcome"] or "")):
        if row["end"] is not None:
            history_end[row["run"]] = max(history_end.get(row["run"], row["end"]), row["end"])
            if row["f"] == "send" and row["outcome"] == "ok" and row["count"] is not None:
                last_send_ok[row["run"]] = row["end"]
        if row["count"] is None:  # a completion that followed no invoke: only its time counts
            continue
        outcome = row["outcome"] or "pending"
        stats[row["run"]]["operations"].append(
            {"f": row["f"], "outcome": outcome, "count": row["count"]})
    for run_stats_ in stats.values():
        counts = {(o["f"], o["outcome"]): o["count"] for o in run_stats_["operations"]}
        run_stats_.update(
            sends_ok=counts.get(("send", "ok"), 0), sends_fail=counts.get(("send", "fail"), 0),
            sends_info=counts.get(("send", "info"), 0), recvs=counts.get(("recv", "ok"), 0),
            failovers=counts.get(("failover", "ok"), 0))
    return history_end, last_send_ok


def _latency(rows: list[dict[str, Any]], stats: dict[str, RunStats]) -> None:
    for row in sorted(rows, key=lambda r: (r["run"], r["f"], r["second"])):
        stats[row["run"]]["latency"].append(
            {"f": row["f"], "second": row["second"], "count": row["count"],
             **{name: row[name] for name in QUANTILES}, "max_ms": row["max_ms"]})


def _throughput(rows: list[dict[str, Any]], stats: dict[str, RunStats]) -> None:
    """Per second, per operation and cluster: completions by outcome."""
    for row in sorted(rows, key=lambda r: (r["run"], r["second"], r["f"], r["cluster"] or "",
                                           r["outcome"] or "")):
        stats[row["run"]]["throughput"].append(
            {"f": row["f"], "cluster": row["cluster"], "outcome": row["outcome"],
             "second": row["second"], "count": row["count"]})


def _fault_intervals(frames: HistoryFrames) -> list[FaultInterval]:
    """Every fault's interval; `end` None for one never healed, which lasts to the end of
    the history (known only once the aggregates are)."""
    nemesis = frames.nemesis
    intervals = []
    for i, op in enumerate(nemesis):
        if op.f in HEAL_OPS:
            continue
        detail = _json(op.done_detail or op.detail)
        start = op.done_time if op.done_time is not None else op.time
        heal = heal_of(op.f)
        end: int | None = start  # instantaneous: expire-session, kill-leader, ...
        if heal is not None:
            healed = closing_op(nemesis, i, (heal,))
            end = healed.time if healed is not None else None
        intervals.append(FaultInterval(op.run, op.f, start, end, op.index, detail))
    return intervals


def _nemesis(intervals: list[FaultInterval], by_kind: dict[str, list[dict[str, Any]]],
             history_end: dict[str, int], last_send_ok: dict[str, int],
             stats: dict[str, RunStats]) -> None:
    """Each fault interval's entry: its client operations by outcome, their availability,
    and the time from its end to the first acknowledged send completed at or after it. A
    fault never healed ends with the history, so only a send completed at that very moment
    follows it."""
    counts: dict[int, dict[str, int]] = defaultdict(dict)
    for row in by_kind["interval"]:
        counts[row["interval"]][row["outcome"] or "pending"] = row["count"]
    recovered = {row["interval"]: row["end"] for row in by_kind["recovery"]}
    for n, interval in enumerate(intervals):
        end = history_end[interval.run] if interval.end is None else interval.end
        first_ok = recovered.get(n)
        if interval.end is None and last_send_ok.get(interval.run) == end:
            first_ok = end
        by_outcome = counts.get(n, {})
        total = sum(by_outcome.values())
        stats[interval.run]["nemesis"].append({
            "f": interval.f, "index": interval.start_index, "detail": interval.detail,
            "start_ms": interval.start / _MS, "end_ms": end / _MS,
            "operations": by_outcome,
            "availability": by_outcome.get("ok", 0) / total if total else None,
            "recovery_ms": (first_ok - end) / _MS if first_ok is not None else None,
        })


def _json(text: str | None) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return text
