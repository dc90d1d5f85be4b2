"""Figures the report plots beside the verdict: what happened, how fast, and how the
system behaved in each fault interval. Every figure is aggregated by Spark's workers
(`checkers.aggregates`, and joins against the fault intervals here); only the aggregates
(per second, per interval, per failover) reach the driver."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F

from checkers.aggregates import NOT_CLIENTS, QUANTILES, SECOND, aggregates
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
    end: int
    start_index: int
    detail: Any


def run_stats(frames: HistoryFrames) -> dict[str, RunStats]:
    """Statistics for every run, keyed by run. One Spark job computes the counts, the
    latencies and the throughput; faults add jobs when a run has any. (The failovers'
    windows are measured with the anomalies, `checkers.failover_windows`.)"""
    stats: dict[str, RunStats] = {run: {"operations": [], "latency": [], "throughput": [],
                                    "nemesis": [], "failover_windows": []} for run in frames.runs}
    rows = aggregates(frames)
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_kind[row["kind"]].append(row)
    history_end = _operation_counts(by_kind["count"], stats)
    _latency(by_kind["latency"], stats)
    throughput = _throughput(by_kind["throughput"], stats)
    intervals = _fault_intervals(frames, history_end)
    _availability(frames, intervals, stats)
    _recovery(frames, intervals, throughput, stats)
    return stats


def _operation_counts(rows: list[dict[str, Any]], stats: dict[str, RunStats]) -> dict[str, int]:
    """Counts by operation and outcome; returns each run's last event time."""
    history_end: dict[str, int] = {}
    for row in sorted(rows, key=lambda r: (r["run"], r["f"], r["outcome"] or "")):
        if row["end"] is not None:
            history_end[row["run"]] = max(history_end.get(row["run"], row["end"]), row["end"])
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
    return history_end


def _client_ops() -> Column:
    return ~F.col("process").isin(*NOT_CLIENTS)


def _latency(rows: list[dict[str, Any]], stats: dict[str, RunStats]) -> None:
    for row in sorted(rows, key=lambda r: (r["run"], r["f"], r["second"])):
        stats[row["run"]]["latency"].append(
            {"f": row["f"], "second": row["second"], "count": row["count"],
             **{name: row[name] for name in QUANTILES}, "max_ms": row["max_ms"]})


def _throughput(rows: list[dict[str, Any]],
                stats: dict[str, RunStats]) -> dict[str, dict[int, int]]:
    """Per second, per operation and cluster: completions by outcome. Returns the seconds
    with acknowledged sends per run, which the recovery figures search."""
    sends_ok: dict[str, dict[int, int]] = defaultdict(dict)
    for row in sorted(rows, key=lambda r: (r["run"], r["second"], r["f"], r["cluster"] or "",
                                           r["outcome"] or "")):
        stats[row["run"]]["throughput"].append(
            {"f": row["f"], "cluster": row["cluster"], "outcome": row["outcome"],
             "second": row["second"], "count": row["count"]})
        if row["f"] == "send" and row["outcome"] == "ok":
            sends_ok[row["run"]][row["second"]] = row["count"]
    return sends_ok


def _fault_intervals(frames: HistoryFrames, history_end: dict[str, int]) -> list[FaultInterval]:
    nemesis = frames.nemesis
    intervals = []
    for i, op in enumerate(nemesis):
        if op.f in HEAL_OPS:
            continue
        detail = _json(op.done_detail or op.detail)
        start = op.done_time if op.done_time is not None else op.time
        heal = heal_of(op.f)
        if heal is None:  # instantaneous: expire-session, kill-leader, ...
            end = start
        else:
            healed = closing_op(nemesis, i, (heal,))
            end = healed.time if healed is not None else history_end[op.run]
        intervals.append(FaultInterval(op.run, op.f, start, end, op.index, detail))
    return intervals


def _availability(frames: HistoryFrames, intervals: list[FaultInterval],
                  stats: dict[str, RunStats]) -> None:
    if not intervals:
        return
    table = frames.spark.createDataFrame(
        [(n, i.run, i.start, i.end) for n, i in enumerate(intervals)],
        "interval long, run string, start long, end long")
    rows = (frames.ops.filter(_client_ops()).alias("o")
            .join(F.broadcast(table).alias("i"),
                  (F.col("o.run") == F.col("i.run"))
                  & F.col("o.inv_time").between(F.col("i.start"), F.col("i.end")))
            .groupBy("interval", "outcome").count().collect())
    counts: dict[int, dict[str, int]] = defaultdict(dict)
    for row in rows:
        counts[row["interval"]][row["outcome"] or "pending"] = row["count"]
    for n, interval in enumerate(intervals):
        by_outcome = counts.get(n, {})
        total = sum(by_outcome.values())
        stats[interval.run]["nemesis"].append({
            "f": interval.f, "index": interval.start_index, "detail": interval.detail,
            "start_ms": interval.start / _MS, "end_ms": interval.end / _MS,
            "operations": by_outcome,
            "availability": by_outcome.get("ok", 0) / total if total else None,
            "recovery_ms": None,  # set by _recovery when an acknowledged send follows
        })


def _recovery(frames: HistoryFrames, intervals: list[FaultInterval],
              sends_ok: dict[str, dict[int, int]], stats: dict[str, RunStats]) -> None:
    """Time from each interval's end (the heal) to the first acknowledged send after it.
    The first such send lies in the first second at or after the heal that had any, so
    only the sends of those few seconds are read."""
    wanted: dict[tuple[str, int], list[int]] = {}
    for n, interval in enumerate(intervals):
        heal_second = interval.end // SECOND
        seconds = sorted(s for s in sends_ok.get(interval.run, {}) if s >= heal_second)
        for second in seconds[:2]:
            wanted.setdefault((interval.run, second), []).append(n)
    if not wanted:
        return
    table = frames.spark.createDataFrame(list(wanted), "run string, second long")
    rows = (frames.ops.filter((F.col("f") == "send") & (F.col("outcome") == "ok"))
            .withColumn("second", F.expr(f"done_time div {SECOND}"))  # as the throughput's
            .join(F.broadcast(table), ["run", "second"], "left_semi")
            .select("run", "done_time").collect())
    times: dict[str, list[int]] = defaultdict(list)
    for row in rows:
        times[row["run"]].append(row["done_time"])
    nemesis_rows = {run: iter(s["nemesis"]) for run, s in stats.items()}
    for interval in intervals:
        entry = next(nemesis_rows[interval.run])
        after = [t for t in times.get(interval.run, ()) if t >= interval.end]
        entry["recovery_ms"] = (min(after) - interval.end) / _MS if after else None


def _json(text: str | None) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return text
