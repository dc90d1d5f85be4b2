"""`starquake check`: judge one history, one run directory, or every run below a directory."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from checkers.anomaly import CheckSettings
from checkers.load import PreparedHistory, prepare
from checkers.spark_settings import SparkSettings, spark_options
from history.errors import INVALID, UNKNOWN, VALID, StarquakeError
from history.reader import discover_runs

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


def exit_code(valid: bool | str) -> int:
    return VALID if valid is True else INVALID if valid is False else UNKNOWN


@click.command()
@click.argument("path", type=click.Path(exists=True, path_type=Path))
@click.option("--out", type=click.Path(path_type=Path),
              help="Where to write results.json (one run) or summary.json (many runs).")
@spark_options
@click.option("--duplicate-window-bound-ms", type=click.IntRange(min=0),
              help="Bound for duplicate-window, overriding the history's meta event.")
@click.option("--unavailable-bound-ms", type=click.IntRange(min=1),
              help="Judge unavailable in every run with this bound (a run's meta event may "
                   "set one; without either, unavailable is not judged).")
def check(path: Path, out: Path | None, spark: SparkSettings,
          duplicate_window_bound_ms: int | None, unavailable_bound_ms: int | None) -> int:
    """Check PATH: a history (.jsonl or .parquet), a run directory, or a directory of runs.

    Exits 0 valid, 1 invalid, 2 unknown, 3 bad input.
    """
    from checkers.session import spark_session

    histories = _prepared(path)
    return _judge(spark_session(spark), histories, path, out, spark,
                  CheckSettings(duplicate_window_bound_ms=duplicate_window_bound_ms,
                                unavailable_bound_ms=unavailable_bound_ms))


WORKER_DONE = "starquake check-worker: exit "
"""The line that ends the worker's output for one run, followed by that run's exit code."""


@click.command("check-worker", hidden=True)
@spark_options
def check_worker(spark: SparkSettings) -> int:
    """Judge the run directories named on standard input, one per line, in one Spark
    session, ending each run's output with WORKER_DONE and its exit code.

    `run`, `suite`, `detect` and `conform` judge their runs through this worker, so the
    runs of a suite share one JVM: a cold session costs about 15 s before its first
    verdict, a warm one judges a run's history in 2 to 3 s. A run it cannot judge for bad
    input is answered with 3 and the worker goes on; any other failure ends the worker,
    which is started again for the next run.
    """
    session: SparkSession | None = None
    for line in sys.stdin:
        run_dir = Path(line.rstrip("\n"))
        try:
            histories = _prepared(run_dir)
            if session is None:
                from checkers.session import spark_session
                session = spark_session(spark)
            code = _judge(session, histories, run_dir, None, spark, CheckSettings())
        except StarquakeError as exc:
            click.echo(f"starquake: {exc}")
            code = exc.exit_code
        click.echo(f"{WORKER_DONE}{code}")
        sys.stdout.flush()
    return VALID


def _prepared(path: Path) -> dict[str, PreparedHistory]:
    """Every run under `path`, validated and paired before Spark starts, so bad input
    costs no JVM."""
    return {run: prepare(history) for run, history in discover_runs(path).items()}


def _judge(session: SparkSession, histories: dict[str, PreparedHistory], path: Path,
           out: Path | None, spark: SparkSettings, settings: CheckSettings) -> int:
    """Judge the runs in `session`, write results.json (and summary.json for several
    runs), print them, and return the exit code."""
    from checkers.check import check_runs, combine, write_results
    from checkers.staging import staged

    with staged(histories, spark.shared_dir) as readable:
        results = check_runs(session, readable, settings)
    if len(results) == 1 and (path.is_file() or histories[results[0].run].source.parent == path):
        written = write_results(results[0], out)
        _print_run(results[0].results, written)
        return exit_code(results[0].valid)
    summary: dict[str, Any] = {"valid": combine([r.valid for r in results]), "runs": {}}
    for result in results:
        written = write_results(result)
        summary["runs"][result.run] = {
            "valid": result.valid, "results": str(written), "events": result.results["events"],
            "anomalies": {name: c["count"] for name, c in result.results["checkers"].items()
                          if c["count"]}}
    summary_path = out or path / "summary.json"
    summary_path.write_text(json.dumps(summary, indent=2) + "\n")
    _print_summary(summary, summary_path)
    return exit_code(summary["valid"])


_VERDICT_TEXT: dict[bool | str, str] = {True: "valid", False: "INVALID"}


def _verdict_text(valid: bool | str) -> str:
    return _VERDICT_TEXT.get(valid, "unknown")


def _print_run(results: dict[str, Any], written: Path) -> None:
    click.echo(f"{results['history']}: {results['events']} events")
    if results.get("truncated_tail"):
        click.echo("  warning: the last line was incomplete and was dropped (run cut short)")
    for name, checker in results["checkers"].items():
        line = f"  {name:<17} {_verdict_text(checker['valid']):<8} {checker['count']}"
        if checker["examples"]:
            line += f"   e.g. events {checker['examples'][0].get('events')}"
        if checker.get("reason"):
            line += f"   ({checker['reason']})"
        if checker.get("error"):
            error = checker["error"]
            first_line = error["message"].split("\n", 1)[0]
            line += f"   (failed: {error['type']}: {first_line})"
        click.echo(line)
    click.echo(f"verdict: {_verdict_text(results['valid'])}   results: {written}")


def _print_summary(summary: dict[str, Any], written: Path) -> None:
    for run, entry in summary["runs"].items():
        anomalies = ", ".join(f"{k}={v}" for k, v in entry["anomalies"].items()) or "-"
        click.echo(f"  {_verdict_text(entry['valid']):<8} {run}   {anomalies}")
    click.echo(f"verdict: {_verdict_text(summary['valid'])} over {len(summary['runs'])} runs"
               f"   summary: {written}")


def _parse_injections(text: str) -> dict[str, int]:
    from checkers.synthetic import INJECTABLE

    injections: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        kind, _, count = item.partition("=")
        if kind not in INJECTABLE or not count.isdigit():
            raise click.BadParameter(f"{item!r}: expected KIND=COUNT with KIND one of "
                                     f"{', '.join(INJECTABLE)}", param_hint="--inject")
        injections[kind] = int(count)
    return injections


@click.command()
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--messages", default=2000, show_default=True, type=click.IntRange(min=100))
@click.option("--seed", default=0, show_default=True)
@click.option("--inject", default="", help="Anomalies to inject, e.g. lost=3,order=1.")
@click.option("--parquet", is_flag=True, help="Write history.parquet instead of .jsonl.")
def synth(run_dir: Path, messages: int, seed: int, inject: str, parquet: bool) -> None:
    """Write a synthetic run's history into RUN_DIR, with anomalies of known counts.

    For trying the checkers, reports and CI wiring without a cluster.
    """
    from checkers.synthetic import SyntheticSpec, write_jsonl, write_parquet

    spec = SyntheticSpec(messages=messages, seed=seed, inject=_parse_injections(inject))
    run_dir.mkdir(parents=True, exist_ok=True)
    path = run_dir / ("history.parquet" if parquet else "history.jsonl")
    if path.exists():
        raise click.BadParameter(f"{path} exists; histories are never overwritten",
                                 param_hint="RUN_DIR")
    events = (write_parquet if parquet else write_jsonl)(spec, path)
    click.echo(f"{path}: {events} events, injected {spec.inject or 'nothing'}")
