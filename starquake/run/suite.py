"""`starquake suite`: run a set of scenarios one after another, then index them.

A suite passes when every run ends with the verdict its scenario expects: a mutant
scenario that is caught (invalid, as expected) passes, a legal scenario with an anomaly
fails. Every scenario is validated before the first cluster starts, so a typo in the
tenth file does not waste the first nine runs. A run that cannot finish (the engine goes
away, a node will not start) is reported and the suite goes on with the next one.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import click
from rich.console import Console

from checkers.spark_settings import SparkSettings, spark_options
from harness.backends import BACKENDS
from history.errors import ENVIRONMENT, INVALID, VALID, StarquakeError
from reports.run_dir import missing_anomalies
from scenarios.catalogue import resolve_suite
from starquake.output import command_console
from starquake.run.check_worker import CheckWorker, Judge
from starquake.run.pipeline import RunOptions, resolve
from starquake.run.pipeline import run as run_scenario
from starquake.run.summary import print_summary

VERDICT_CODES = {"valid": 0, "invalid": 1, "unknown": 2}


@dataclass(frozen=True)
class SuiteResult:
    scenario: Path
    expected: str
    exit_code: int
    run_dir: Path | None
    missing: tuple[str, ...] = ()
    """Expected anomalies the run did not show: without them an `invalid` is not the catch
    the scenario is about."""

    @property
    def passed(self) -> bool:
        return self.exit_code == VERDICT_CODES[self.expected] and not self.missing


def scenario_files(paths: list[Path]) -> list[Path]:
    """Scenario files named directly, every `*.toml` in the directories named (in name
    order), and packaged suites or scenarios named (`smoke`, `mutants/...`,
    scenarios/catalogue.py); anything else is bad input."""
    return [file for path in paths for file in resolve_suite(str(path))]


def run_suite(files: list[Path], options: RunOptions, console: Console,
              keep_going: Callable[[], bool] = lambda: True, *,
              between: Callable[[], None] | None = None,
              command_for: Callable[[Path], str | None] | None = None,
              parallel: int = 1) -> Iterator[SuiteResult]:
    """Every scenario's run, judged by one check worker (its Spark session starts once),
    each yielded as it ends so that a caller can keep it before the next one starts.
    `keep_going` is asked before each run; once it says no, no run starts. `between` is
    called after each run (a given Target tended before the next); `command_for` gives a
    run's reproducing command where the default (`starquake reproduce`) would not do.
    `parallel` 2 runs two at a time, each in a process of its own (starquake/run/lanes.py),
    and yields in the files' order; it is for backends, whose runs need neither."""
    if not files:
        return
    scenarios = {f: resolve(dataclasses.replace(options, scenario=f))[0] for f in files}
    expected = {f: (s.expected, s.expected_anomalies) for f, s in scenarios.items()}
    if parallel > 1:
        from starquake.run.lanes import run_in_lanes

        assert between is None and command_for is None and options.target is None
        yield from run_in_lanes(files, expected, options, console, keep_going, parallel)
        return
    with CheckWorker(options.spark) as checks:
        for number, scenario in enumerate(files, start=1):
            if not keep_going():
                return
            console.print(f"suite: {number}/{len(files)} {scenario}", markup=False)
            command = None if command_for is None else command_for(scenario)
            yield judged_run(dataclasses.replace(options, scenario=scenario,
                                                 command=command or options.command),
                             expected[scenario], console, checks)
            if between is not None:
                between()


def judged_run(options: RunOptions, expected: tuple[str, tuple[str, ...]], console: Console,
               checks: Judge) -> SuiteResult:
    """`options.scenario`'s run and its verdict against `expected` (the verdict and the
    anomalies its scenario expects); a run that could not finish is a result with no run
    directory, anything else that stops a run is raised."""
    verdict, anomalies = expected
    try:
        outcome = run_scenario(options, console, checks)
    except StarquakeError as exc:
        if exc.exit_code != ENVIRONMENT:
            raise
        console.print(f"suite: {options.scenario} could not run: {exc}", markup=False)
        return SuiteResult(options.scenario, verdict, exc.exit_code, None)
    print_summary(console, outcome)
    return SuiteResult(options.scenario, verdict, outcome.exit_code, outcome.run_dir,
                       tuple(missing_anomalies(outcome.results, list(anomalies))))


@click.command()
@click.argument("paths", nargs=-1, required=True,
                type=click.Path(path_type=Path))
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="One seed for every run [each scenario's, else random; recorded].")
@click.option("--backend", type=click.Choice(tuple(BACKENDS)), default=None,
              help="Overrides every scenario's topology.backend.")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the runs, index.html and junit.xml go "
                   "[runs/suite-<timestamp>].")
@click.option("--without-mutants", is_flag=True,
              help="Run every scenario's clean twin: its mutants off, expecting valid.")
@spark_options
def suite(paths: tuple[Path, ...], seed: int | None, backend: str | None,
          runs_dir: Path | None, without_mutants: bool, spark: SparkSettings) -> int:
    """Run every scenario in PATHS (files, directories of *.toml, or packaged suites
    and scenarios such as smoke or mutants/..., see `starquake scenario ls`), then write
    index.html and junit.xml beside the runs.

    Exits 0 when every run ended with its expected verdict, 1 when one did not, 3 on a bad
    scenario (before anything runs), 4 when a run could not finish.
    """
    from reports.suite import write_suite_index

    console = command_console()
    files = scenario_files(list(paths))
    top = runs_dir or Path("runs") / f"suite-{time.strftime('%Y%m%d-%H%M%S')}"
    results = list(run_suite(files, RunOptions(files[0], seed, backend, top, spark=spark,
                                               without_mutants=without_mutants), console))
    finished = [r.run_dir for r in results if r.run_dir is not None]
    if finished:
        index, junit = write_suite_index(finished, top)
        console.print(f"suite: index {index}\nsuite: junit {junit}", markup=False)
    for result in results:
        mark = "pass" if result.passed else "FAIL"
        missing = f" (no {', '.join(result.missing)})" if result.missing else ""
        console.print(f"  {mark}  {result.scenario}  expected {result.expected}, "
                      f"exit {result.exit_code}{missing}", markup=False)
    if any(r.run_dir is None for r in results):
        return ENVIRONMENT
    return VALID if all(r.passed for r in results) else INVALID
