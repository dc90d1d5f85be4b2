"""`starquake bench check --from-run`: the checkers timed on what a real run recorded,
made as large as the bench asks by writing the run's history in copies
(`checkers.scale_history`), instead of on a generated mix.

A real history has no injected counts to verify, so the bench finds them: it judges the
original with the same checkers, and queries it with DuckDB, before it times anything,
and then holds the copies to exactly the number of copies times each count. A check that
passes says both that the checkers found in the large history what they found in the run,
and that copying kept every anomaly and made none.
"""

from __future__ import annotations

import dataclasses
import functools
import multiprocessing
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click
import pyarrow.parquet as pq

from checkers.scale_history import copies_for, parquet_copy, write_copies
from checkers.spark_settings import SparkSettings
from history.reader import HistoryError, find_history
from starquake.bench.duckdb_checks import duckdb_counts


@dataclass(frozen=True)
class RealRun:
    """A run's history as Parquet, what the checkers and DuckDB count in it, and how many
    copies of it make the bench's history."""

    name: str
    """`from-` and the name of the directory the history is in."""
    parquet: Path
    events: int
    copies: int
    checker_counts: dict[str, int]
    duckdb_counts: dict[str, int]

    @property
    def expected(self) -> dict[str, int]:
        """What the checkers must count in the copies."""
        return _times(self.checker_counts, self.copies)

    @property
    def duckdb_expected(self) -> dict[str, int]:
        """What DuckDB must count in the copies: its own counts, not the checkers', since
        a few queries count otherwise by design (`starquake.bench.duckdb_checks`)."""
        return _times(self.duckdb_counts, self.copies)

    def writer(self, path: Path) -> Callable[[], int]:
        """What writes the copies to `path` (picklable, so a child process can run it)."""
        return functools.partial(write_copies, self.parquet, path, self.copies)


def real_run(run: Path, events: int, spark: SparkSettings, work: Path) -> RealRun:
    """The history of `run` (a run directory or a history file), copied into `work`,
    judged and counted, with the copies that make at least `events` events."""
    parquet = parquet_copy(run, work / "original")
    original_events = pq.ParquetFile(parquet).metadata.num_rows
    if original_events == 0:
        raise HistoryError(f"{run}: no events to copy")
    # In a child process, so the bench's own Spark and peak memory are the copies' alone.
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        checker_counts, duck_counts = pool.apply(
            _counts, (dataclasses.replace(spark, remote=None), parquet))
    found = RealRun(f"from-{find_history(run).resolve().parent.name}", parquet,
                    original_events, copies_for(events, original_events), checker_counts,
                    duck_counts)
    click.echo(f"{run}: {original_events:,} events, {found.copies:,} copies; the checkers "
               f"count {_found(checker_counts)} in it, duckdb {_found(duck_counts)}")
    return found


def _counts(spark: SparkSettings, history: Path) -> tuple[dict[str, int], dict[str, int]]:
    """Each checker's count in `history`, judged in a Spark of this process's own, and
    each DuckDB query's."""
    from checkers.anomaly import CheckSettings
    from checkers.check import check_runs
    from checkers.load import prepare
    from checkers.session import spark_session
    from checkers.staging import staged

    session = spark_session(spark)
    try:
        with staged({"original": prepare(history)}, spark.shared_dir) as readable:
            (result,) = check_runs(session, readable, CheckSettings())
    finally:
        session.stop()
    checkers = result.results["checkers"]
    return ({name: checker["count"] for name, checker in checkers.items()},
            duckdb_counts(history).counts)


def _times(counts: dict[str, int], copies: int) -> dict[str, int]:
    return {name: count * copies for name, count in counts.items()}


def _found(counts: dict[str, int]) -> str:
    """The anomalies counted, for a line of the bench's output."""
    return ", ".join(f"{name} {count}" for name, count in counts.items() if count) or "none"
