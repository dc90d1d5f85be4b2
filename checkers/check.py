"""Checking runs: every checker over every run in one Spark job, then the verdicts.

Verdicts compose as Jepsen's do: false beats "unknown" beats true.
"""

from __future__ import annotations

import json
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import reduce
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from checkers.anomaly import Checker, CheckSettings
from checkers.availability import unavailable, unavailable_bounds
from checkers.contract import UNDECIDED, contract
from checkers.delivery import deliveries
from checkers.duplicates import judged_failovers
from checkers.failover_windows import FAILOVER_WINDOW, judged_windows
from checkers.forked_position import forked_position
from checkers.frames import HistoryFrames
from checkers.load import PreparedHistory
from checkers.per_value import PRODUCER_RETRY
from checkers.segments import segment_checks
from checkers.sessions import reassigned
from checkers.stalled import stalled_subscriptions
from checkers.stats import run_stats
from checkers.zombies import zombie_bounds, zombie_brokers

CHECKERS = (
    Checker("lost", deliveries, needs_drain=True),
    Checker("unexpected", deliveries),
    Checker("failed-delivered", deliveries),
    Checker("duplicate", deliveries),
    # Measured with the deliveries (a `FAILOVER_WINDOW` row per failover with redeliveries),
    # set against the bound on the driver (`judged_windows`).
    Checker("duplicate-window", deliveries),
    Checker("dual-write", segment_checks),
    Checker("forked-position", forked_position),
    Checker("misrouted", segment_checks),
    Checker("order", deliveries),
    Checker("contract", contract),
    Checker("stalled-subscription", stalled_subscriptions),
    Checker("multi-position", deliveries),
    Checker("ack-unapplied", deliveries, needs_drain=True),
    Checker("unavailable", unavailable, judges=unavailable_bounds),
    Checker("reassigned", reassigned),
    Checker("zombie-broker", zombie_brokers, judges=zombie_bounds),
)
UNDECIDED_ROWS = {"contract": (UNDECIDED, "probes could not run or be judged")}
"""Checkers whose finder also reports the units it could not judge, as rows under another
name: any such row makes the checker unknown (false still wins), with those rows as its
`undecided` count and examples."""
EXAMPLES_PER_CHECKER = 10

Verdict = bool | str  # True, False or "unknown"


def combine(verdicts: list[Verdict]) -> Verdict:
    if any(v is False for v in verdicts):
        return False
    if any(v == "unknown" for v in verdicts):
        return "unknown"
    return True


@dataclass(frozen=True)
class RunResult:
    run: str
    history: PreparedHistory
    results: dict[str, Any]

    @property
    def valid(self) -> Verdict:
        verdict: Verdict = self.results["valid"]
        return verdict


def check_runs(spark: SparkSession, histories: dict[str, PreparedHistory],
               settings: CheckSettings) -> list[RunResult]:
    """The results of every run, as `results.json` documents (see the history spec)."""
    frames = HistoryFrames.load(spark, histories)
    per_checker = Window.partitionBy("checker", "run")
    # The statistics (with the acks `duplicate-window` judged) are a job of their own,
    # submitted first: it takes the cores while the driver plans the finders (planning the
    # deliveries runs the coverage's jobs, `checkers.coverage`), and those the anomaly job
    # leaves idle between its stages.
    with ThreadPoolExecutor(max_workers=1) as pool:
        stats_job = pool.submit(run_stats, frames)
        try:
            # Each finder once, however many checkers it decides.
            finders = dict.fromkeys(checker.finder for checker in CHECKERS)
            found = reduce(DataFrame.unionByName,
                           [find(frames, settings) for find in finders])
            first = (found.withColumn("rank",
                                      F.row_number().over(per_checker.orderBy("sort_key")))
                     .withColumn("count", F.sum("weight").over(per_checker))
                     .filter((F.col("rank") <= EXAMPLES_PER_CHECKER)
                             | (F.col("checker") == FAILOVER_WINDOW))
                     .select("checker", "run", "count", "rank", "example").collect())
        except BaseException:
            spark.sparkContext.cancelAllJobs()  # a failure or Ctrl-C waits for no statistics
            raise
        stats, window_acks = stats_job.result()
    excused: dict[str, list[int]] = defaultdict(list)
    for failover in judged_failovers(frames)[1]:
        excused[failover.run].append(failover.index)
    counts: dict[tuple[str, str], int] = {}
    examples: dict[tuple[str, str], list[Any]] = defaultdict(list)
    for row in sorted(first, key=lambda r: r["rank"]):
        counts[(row["checker"], row["run"])] = row["count"]
        examples[(row["checker"], row["run"])].append(json.loads(row["example"]))
    judged = {checker.name: set(checker.judges(frames, settings))
              for checker in CHECKERS if checker.judges is not None}
    results = []
    for run, history in histories.items():
        windows = judged_windows(frames, settings, run, examples.get((FAILOVER_WINDOW, run), []))
        stats[run]["failover_windows"] = windows.statistics
        counts[("duplicate-window", run)] = len(windows.anomalies)
        examples[("duplicate-window", run)] = windows.anomalies[:EXAMPLES_PER_CHECKER]
        checkers: dict[str, dict[str, Any]] = {}
        for checker in CHECKERS:
            if checker.name in judged and run not in judged[checker.name]:
                continue  # optional, and not asked for in this run
            count = counts.get((checker.name, run), 0)
            shown = examples.get((checker.name, run), [])
            if checker.needs_drain and run not in frames.drained:
                # The definition requires a completed drain: nothing is lost yet, but
                # nothing is proven delivered either. Keep what is still missing visible.
                checkers[checker.name] = {
                    "valid": "unknown", "count": 0, "examples": [], "undecided": count,
                    "undecided_examples": shown,
                    "reason": "the history has no completed drain"}
                continue
            checkers[checker.name] = {"valid": count == 0, "count": count, "examples": shown}
            if checker.name in UNDECIDED_ROWS:
                rows, what = UNDECIDED_ROWS[checker.name]
                undecided = counts.get((rows, run), 0)
                if undecided:
                    checkers[checker.name].update({
                        "valid": False if count else "unknown", "undecided": undecided,
                        "undecided_examples": examples.get((rows, run), []),
                        "reason": f"{undecided} {what}"})
        _acks_judged(checkers, stats[run], window_acks.get(run, 0))
        checkers["duplicate-window"]["failovers_excused"] = excused.get(run, [])
        stats[run]["producer_retries"] = counts.get((PRODUCER_RETRY, run), 0)
        stats[run]["producer_retry_examples"] = examples.get((PRODUCER_RETRY, run), [])
        meta = frames.meta.get(run, {})
        results.append(RunResult(run, history, {
            "valid": combine([c["valid"] for c in checkers.values()]),
            "scenario": meta.get("scenario"),
            "seed": meta.get("seed"),
            "events": history.events,
            "history": str(history.source),
            "truncated_tail": history.truncated_tail,
            "checkers": checkers,
            "stats": stats[run],
        }))
    return results


def _acks_judged(checkers: dict[str, dict[str, Any]], stats: dict[str, Any],
                 before_failovers: int) -> None:
    """How many acks `duplicate` and `duplicate-window` could judge: only an ack completed
    `ok` proves its message acknowledged (for `duplicate-window`, one in the cluster a
    subscription failed over from, before that failover)."""
    acks_ok = next((o["count"] for o in stats["operations"]
                    if o["f"] == "ack" and o["outcome"] == "ok"), 0)
    checkers["duplicate"]["acks_judged"] = acks_ok
    checkers["duplicate-window"]["acks_judged"] = before_failovers


def write_results(result: RunResult, out: Path | None = None) -> Path:
    path = out or result.history.source.parent / "results.json"
    path.write_text(json.dumps(result.results, indent=2, default=str) + "\n")
    return path
