"""Checking runs: every checker over every run in one Spark job, then the verdicts.

The checkers are those of the registry (`history.checker_registry`, bound by
`checkers.registry`). Verdicts compose as Jepsen's do: false beats "unknown" beats true;
a checker that raises is unknown, with its error, and the others still judge
(`checkers.safe`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, Row, SparkSession, Window
from pyspark.sql import functions as F

from checkers.anomaly import CheckSettings, undecided_rows
from checkers.duplicates import judged_failovers
from checkers.failover_windows import FAILOVER_WINDOW, Windows, judged_windows
from checkers.frames import HistoryFrames
from checkers.load import PreparedHistory
from checkers.per_value import PRODUCER_RETRY
from checkers.registry import Checker, registered
from checkers.safe import CheckerFailure, attempt, find_all
from checkers.session import cancel_jobs, in_this_check
from checkers.stats import run_stats
from checkers.unreplicated import UNREPLICATED
from history.version import starquake_version

EXAMPLES_PER_CHECKER = 10
DUPLICATE_WINDOW = "duplicate-window"
"""Measured with the deliveries (a `FAILOVER_WINDOW` row per failover with redeliveries),
set against the bound on the driver (`judged_windows`)."""

Verdict = bool | str  # True, False or "unknown"
Key = tuple[str, str]  # (checker, run)


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


@dataclass(frozen=True)
class _Found:
    """What the finders found, by (checker, run), and the checkers that failed."""

    counts: dict[Key, int]
    examples: dict[Key, list[Any]]
    failures: dict[str, CheckerFailure]
    judged: dict[str, set[str]]
    """By optional checker: the runs it judges."""


def check_runs(spark: SparkSession, histories: dict[str, PreparedHistory],
               settings: CheckSettings) -> list[RunResult]:
    """The results of every run, as `results.json` documents (see the history spec)."""
    frames = HistoryFrames.load(spark, histories)
    checkers = registered()
    # The statistics (with the acks `duplicate-window` judged) are a job of their own,
    # submitted first: it takes the cores while the driver plans the finders (planning the
    # deliveries runs the coverage's jobs, `checkers.coverage`), and those the anomaly job
    # leaves idle between its stages.
    with ThreadPoolExecutor(max_workers=1) as pool:
        stats_job = pool.submit(in_this_check(spark, run_stats), frames)
        try:
            findings = find_all(checkers, frames, settings, _first_examples)
        except BaseException:
            cancel_jobs(spark)  # a Ctrl-C waits for no statistics
            raise
        stats, window_acks = stats_job.result()
    found = _Found({}, defaultdict(list), dict(findings.failures), {})
    for row in sorted(findings.rows, key=lambda r: r["rank"]):
        found.counts[(row["checker"], row["run"])] = row["count"]
        found.examples[(row["checker"], row["run"])].append(json.loads(row["example"]))
    for checker in checkers:
        if checker.entry.optional and checker.name not in found.failures:
            runs = attempt(f"{checker.name}'s judged runs",
                           partial(_judged_runs, checker, frames, settings))
            if isinstance(runs, CheckerFailure):
                found.failures[checker.name] = runs
            else:
                found.judged[checker.name] = runs
    failover_windows = attempt(f"{DUPLICATE_WINDOW}'s windows",
                               partial(_windows, frames, settings, found.examples))
    if isinstance(failover_windows, CheckerFailure):
        found.failures.setdefault(DUPLICATE_WINDOW, failover_windows)
        failover_windows = ({}, {})
    windows, excused = failover_windows
    results = []
    for run, history in histories.items():
        if run in windows:
            stats[run]["failover_windows"] = windows[run].statistics
            found.counts[(DUPLICATE_WINDOW, run)] = len(windows[run].anomalies)
            found.examples[(DUPLICATE_WINDOW, run)] = (
                windows[run].anomalies[:EXAMPLES_PER_CHECKER])
        entries = {checker.name: entry for checker in checkers
                   if (entry := _result(checker, run, frames, found)) is not None}
        for name, facts in _acks_judged(stats[run], window_acks.get(run, 0),
                                        excused.get(run, [])).items():
            if name in entries and name not in found.failures:
                entries[name].update(facts)
        stats[run]["producer_retries"] = found.counts.get((PRODUCER_RETRY, run), 0)
        stats[run]["producer_retry_examples"] = found.examples.get((PRODUCER_RETRY, run), [])
        stats[run]["unreplicated"] = found.counts.get((UNREPLICATED, run), 0)
        stats[run]["unreplicated_examples"] = found.examples.get((UNREPLICATED, run), [])
        meta = frames.meta.get(run, {})
        results.append(RunResult(run, history, {
            "valid": combine([c["valid"] for c in entries.values()]),
            "scenario": meta.get("scenario"),
            "seed": meta.get("seed"),
            "events": history.events,
            "history": str(history.source),
            "truncated_tail": history.truncated_tail,
            "checkers": entries,
            "stats": stats[run],
        }))
    return results


def _first_examples(found: DataFrame) -> list[Row]:
    """Each (checker, run)'s count with its first examples by `sort_key` (and every
    `FAILOVER_WINDOW` row, which `judged_windows` sets against the bound)."""
    per_checker = Window.partitionBy("checker", "run")
    return (found.withColumn("rank", F.row_number().over(per_checker.orderBy("sort_key")))
            .withColumn("count", F.sum("weight").over(per_checker))
            .filter((F.col("rank") <= EXAMPLES_PER_CHECKER)
                    | (F.col("checker") == FAILOVER_WINDOW))
            .select("checker", "run", "count", "rank", "example").collect())


def _judged_runs(checker: Checker, frames: HistoryFrames, settings: CheckSettings) -> set[str]:
    """The runs an optional checker judges (looking its function up may fail too)."""
    judges = checker.judges
    return set() if judges is None else set(judges(frames, settings))


def _windows(frames: HistoryFrames, settings: CheckSettings, examples: dict[Key, list[Any]]
             ) -> tuple[dict[str, Windows], dict[str, list[int]]]:
    """By run, `duplicate-window`'s judged windows and the failovers it excused."""
    windows = {run: judged_windows(frames, settings, run,
                                   examples.get((FAILOVER_WINDOW, run), []))
               for run in frames.runs}
    excused: dict[str, list[int]] = defaultdict(list)
    for failover in judged_failovers(frames)[1]:
        excused[failover.run].append(failover.index)
    return windows, excused


def _result(checker: Checker, run: str, frames: HistoryFrames,
            found: _Found) -> dict[str, Any] | None:
    """`checker`'s entry in `run`'s results; None when it is optional and the run does not
    ask for it."""
    name = checker.name
    if name in found.judged and run not in found.judged[name]:
        return None
    if name in found.failures:
        return found.failures[name].result()
    count = found.counts.get((name, run), 0)
    shown = found.examples.get((name, run), [])
    if checker.entry.needs_drain and run not in frames.drained:
        # The definition requires a completed drain: nothing is lost yet, but nothing is
        # proven delivered either. Keep what is still missing visible.
        return {"valid": "unknown", "count": 0, "examples": [], "undecided": count,
                "undecided_examples": shown, "reason": "the history has no completed drain"}
    result: dict[str, Any] = {"valid": count == 0, "count": count, "examples": shown}
    what = checker.entry.undecided
    undecided = found.counts.get((undecided_rows(name), run), 0) if what else 0
    if undecided:
        result.update({"valid": False if count else "unknown", "undecided": undecided,
                       "undecided_examples": found.examples.get((undecided_rows(name), run), []),
                       "reason": f"{undecided} {what}"})
    return result


def _acks_judged(stats: dict[str, Any], before_failovers: int,
                 excused: list[int]) -> dict[str, dict[str, Any]]:
    """By checker, the facts of what `duplicate` and `duplicate-window` could judge: only
    an ack completed `ok` proves its message acknowledged (for `duplicate-window`, one in
    the cluster a subscription failed over from, before that failover), and the failovers
    `duplicate-window` excused."""
    acks_ok = next((o["count"] for o in stats["operations"]
                    if o["f"] == "ack" and o["outcome"] == "ok"), 0)
    return {"duplicate": {"acks_judged": acks_ok},
            DUPLICATE_WINDOW: {"acks_judged": before_failovers, "failovers_excused": excused}}


def write_results(result: RunResult, out: Path | None = None) -> Path:
    path = out or result.history.source.parent / "results.json"
    # First in the file: the starquake that judged the run (docs/history.md).
    document = {"starquake_version": starquake_version(), **result.results}
    path.write_text(json.dumps(document, indent=2, default=str) + "\n")
    return path
