"""`starquake bench check --end-to-end`: `starquake check FILE` timed as a user meets it,
from pressing enter to the verdict, on a small history and on the bench's large one:

- cold: a Spark of the command's own (`--spark-remote own`), started and stopped by it;
- first: the check that starts the resident server (what the first check of a session pays);
- warm: through that resident server, already up;
- DuckDB answering the four core questions (lost, unexpected, failed-delivered, duplicate
  after ack) on the same file, in this process, timed from connect to answer: by the
  yardstick's queries, which follow the checkers' definitions (`duckdb_checks`), and by one
  plain query, as a user would first ask them (`duckdb_plain`).

Each figure is the median of `repeats` runs, all in one bench run, so the ratios compare
like with like on whatever the machine is doing. Before every check the files a check
derives from the history (its Parquet conversion and its pairing) are removed, so each one
does the whole job a user's first check of that file does. The resident server is a
private one (its own STARQUAKE_SPARK_HOME under the bench's temporary directory), stopped
at the end: the user's own server, if any, is neither used nor disturbed.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import click

from checkers.load import derived_from
from checkers.resident_state import HOME_ENV
from checkers.spark_settings import OWN, RESIDENT
from history.errors import INVALID, VALID
from starquake.bench.duckdb_checks import duckdb_counts
from starquake.bench.duckdb_plain import VERIFIED, plain_counts

FOUR_QUESTIONS = ("lost", "unexpected", "failed-delivered", "duplicate")
"""What a user asks of a history first, and the DuckDB baseline of the end-to-end ratio."""
SMALL_EXAMPLE = "examples/split-topic/history.jsonl"
"""The small history: the example run shipped with the package (506 events)."""


COLD, FIRST, WARM, DUCKDB, PLAIN = "cold", "first", "warm", "duckdb", "plain"
_SAYS = {COLD: "cold, a Spark of its own", FIRST: "first, starting the resident server",
         WARM: "warm, through the resident server", DUCKDB: "duckdb, the four questions",
         PLAIN: "duckdb, one plain query"}


@dataclass(frozen=True)
class Timings:
    """One way of answering (COLD, FIRST, WARM, DUCKDB or PLAIN): seconds of each repeat,
    in order."""

    way: str
    seconds: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    def line(self) -> str:
        runs = ", ".join(f"{s:.1f}" for s in self.seconds)
        return f"{_SAYS[self.way]}: median {self.median:.1f} s ({runs})"


def small_history(directory: Path) -> Path:
    """A copy of the example history in `directory`, where its derived files may go."""
    target = directory / "small" / "history.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(files("history").joinpath(SMALL_EXAMPLE).read_bytes())
    return target


def end_to_end(history: Path, expected: dict[str, int] | None, work: Path,
               driver_memory: str, repeats: int,
               duckdb_expected: dict[str, int] | None = None,
               plain_expected: dict[str, int] | None = None) -> list[Timings]:
    """Cold, first, warm and DuckDB timings for `history`; with `expected`, every check's
    counts are verified against it (a check that finds other counts fails the bench), and
    DuckDB's against `duckdb_expected` where its queries may count otherwise, and the
    plain query's three exact answers against `plain_expected` (a generated history's
    injections; on a real run's copies it is not verified: its unlinks and failovers are
    what the plain query does not know)."""
    out = work / "results.json"
    environment = {**os.environ, HOME_ENV: str(work / "spark"),
                   "STARQUAKE_SPARK_DRIVER_MEMORY": driver_memory}
    environment.pop("STARQUAKE_SPARK_MASTER", None)

    def timed_check(remote: str) -> float:
        _forget_derived(history)
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "starquake", "check", str(history),
                               "--spark-remote", remote, "--out", str(out)],
                              env=environment, capture_output=True, text=True)
        seconds = time.perf_counter() - started
        if done.returncode not in (VALID, INVALID):
            raise click.ClickException(f"starquake check {history} --spark-remote {remote} "
                                       f"exited {done.returncode}: {done.stderr.strip()}")
        _verify(out, expected, remote)
        return seconds

    parquet = history.suffix == ".parquet"
    duck = [duckdb_counts(history, FOUR_QUESTIONS) for _ in range(repeats)] if parquet else []
    plain = [plain_counts(history) for _ in range(repeats)] if parquet else []
    try:
        timings = [Timings(COLD, [timed_check(OWN) for _ in range(repeats)]),
                   Timings(FIRST, [timed_check(RESIDENT)]),
                   Timings(WARM, [timed_check(RESIDENT) for _ in range(repeats)])]
    finally:
        subprocess.run([sys.executable, "-m", "starquake", "spark", "down"], env=environment,
                       capture_output=True, check=False)
    if duck:
        wanted = expected if duckdb_expected is None else duckdb_expected
        if wanted is not None:
            wrong = {k: c for k, c in duck[0].counts.items() if c != wanted.get(k, 0)}
            if wrong:
                raise click.ClickException(f"duckdb's four questions found {wrong}")
        if plain_expected is not None:
            wrong = {k: plain[0].counts[k] for k in VERIFIED
                     if plain[0].counts[k] != plain_expected.get(k, 0)}
            if wrong:
                raise click.ClickException(f"duckdb's plain query found {wrong}")
        timings.append(Timings(DUCKDB, [d.seconds for d in duck]))
        timings.append(Timings(PLAIN, [d.seconds for d in plain]))
    return timings


def _forget_derived(history: Path) -> None:
    for derived in derived_from(history):
        if derived.is_dir():
            shutil.rmtree(derived)
        else:
            derived.unlink(missing_ok=True)


def _verify(out: Path, expected: dict[str, int] | None, remote: str) -> None:
    if expected is None:
        return
    checkers = json.loads(out.read_text())["checkers"]
    found = {name: result["count"] for name, result in checkers.items()}
    if found != {name: expected.get(name, 0) for name in found}:
        raise click.ClickException(f"the check through {remote} found {found}, expected "
                                   f"{expected}")


def print_timings(label: str, events: int, timings: Sequence[Timings]) -> None:
    click.echo(f"{label} ({events:,} events), from process start to verdict:")
    for timing in timings:
        click.echo(f"  {timing.line()}")
    median = {t.way: t.median for t in timings}
    if DUCKDB in median:
        click.echo(f"  warm / duckdb = {median[WARM] / median[DUCKDB]:.1f}, "
                   f"cold / duckdb = {median[COLD] / median[DUCKDB]:.1f}")
        click.echo(f"  warm / plain duckdb = {median[WARM] / median[PLAIN]:.1f}, "
                   f"cold / plain duckdb = {median[COLD] / median[PLAIN]:.1f}")
    click.echo(f"  cold / warm = {median[COLD] / median[WARM]:.1f}")
