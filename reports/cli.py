"""`starquake report` and `starquake suite-index`: HTML from results and histories."""

from __future__ import annotations

from pathlib import Path

import click

from history.errors import VALID


@click.command()
@click.argument("run", type=click.Path(path_type=Path))
def report(run: Path) -> int:
    """Write RUN/report.html (and timeline pages) for a checked run directory.

    Exits 0 when written, 3 when RUN is not a checked run directory.
    """
    from reports.report import write_report

    written = write_report(run)
    click.echo(f"report: {written}")
    return VALID


@click.command("suite-index")
@click.argument("top", type=click.Path(path_type=Path, file_okay=False))
@click.option("--out", type=click.Path(path_type=Path, file_okay=False),
              help="Where to write index.html and junit.xml [default: TOP].")
@click.option("--reports", "with_reports", is_flag=True,
              help="Write each run's report.html first.")
def suite_index(top: Path, out: Path | None, with_reports: bool) -> int:
    """Write index.html and junit.xml for every checked run below TOP.

    A run passes when its verdict is the one it expected. Exits 0 when written, 3 on bad
    input (no checked run below TOP, or a corrupt one).
    """
    from reports.report import write_report
    from reports.run_dir import RunDirectoryError
    from reports.suite import find_runs, write_suite_index

    runs = find_runs(top) if top.is_dir() else []
    if not runs:
        raise RunDirectoryError(f"{top}: no run directory with results.json in it or below it")
    if with_reports:
        for run in runs:
            write_report(run)
    index, junit = write_suite_index(runs, out or top)
    click.echo(f"index: {index}\njunit: {junit}")
    return VALID
