"""`starquake bench report`: time `starquake report` on a large synthetic run.

The run is generated (`checkers.synthetic`, 10 of each injectable anomaly) and checked
first, untimed: the figure is the report alone, which the target states as under a minute
for a million events.
"""

from __future__ import annotations

import resource
import tempfile
import time
from pathlib import Path

import click

from checkers.spark_settings import SparkSettings, spark_options
from checkers.synthetic import INJECTABLE, SyntheticSpec, write_parquet

_EVENTS_PER_MESSAGE = 5
INJECTED_EACH = 10
TARGET_S = 60.0


def prepare_run(run_dir: Path, events: int, spark: SparkSettings) -> None:
    """A checked synthetic run in `run_dir` (kept as is when it already has results.json)."""
    if (run_dir / "results.json").is_file():
        click.echo(f"reusing the checked run in {run_dir}")
        return
    from checkers.anomaly import CheckSettings
    from checkers.check import check_runs, write_results
    from checkers.load import prepare
    from checkers.session import spark_session
    from checkers.staging import staged

    run_dir.mkdir(parents=True, exist_ok=True)
    spec = SyntheticSpec(messages=events // _EVENTS_PER_MESSAGE, seed=1,
                         inject=dict.fromkeys(INJECTABLE, INJECTED_EACH))
    started = time.perf_counter()
    count = write_parquet(spec, run_dir / "history.parquet")
    click.echo(f"generated {count:,} events in {time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    session = spark_session(spark)
    try:
        with staged({run_dir.name: prepare(run_dir / "history.parquet")},
                    spark.shared_dir) as readable:
            result = check_runs(session, readable, CheckSettings())[0]
    finally:
        session.stop()
    write_results(result)
    click.echo(f"checked in {time.perf_counter() - started:.1f} s (untimed for the target)")


@click.command()
@click.option("--events", default=1_000_000, show_default=True,
              help="About how many events the synthetic history has.")
@click.option("--keep", type=click.Path(path_type=Path, file_okay=False),
              help="Keep (or reuse) the checked run in this directory.")
@spark_options
def bench_report(events: int, keep: Path | None, spark: SparkSettings) -> None:
    """Time `starquake report` on a checked synthetic run of EVENTS events."""
    from reports.report import write_report

    with tempfile.TemporaryDirectory(prefix="starquake-bench-report-") as scratch:
        run_dir = keep or Path(scratch) / "run"
        prepare_run(run_dir, events, spark)
        started = time.perf_counter()
        written = write_report(run_dir)
        elapsed = time.perf_counter() - started
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        pages = len(list(run_dir.glob("timeline*.html")))
        size_kib = written.stat().st_size / 1024
        click.echo(f"report of {events:,} events: {elapsed:.1f} s "
                   f"({elapsed / TARGET_S:.2f} of the {TARGET_S:.0f} s target); "
                   f"report.html {size_kib:,.0f} KiB, {pages} timeline pages; "
                   f"peak RSS of this process {peak_mib:,.0f} MiB "
                   f"(generation included unless reused)")
