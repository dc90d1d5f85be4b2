"""`starquake suite`: run a set of scenarios one after another, then index them.

A suite passes when every run ends with the verdict its scenario expects: a mutant
scenario that is caught (invalid, as expected) passes, a legal scenario with an anomaly
fails. Every scenario is validated before the first cluster starts, so a typo in the
tenth file does not waste the first nine runs. A run that cannot finish (the engine goes
away, a node will not start) is reported and the suite goes on with the next one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import click
from rich.console import Console

from starquake.run.pipeline import RunOptions, resolve
from starquake.run.pipeline import run as run_scenario
from starquake.run.summary import print_summary
from history.errors import ENVIRONMENT, INVALID, VALID, BadInput, StarquakeError

VERDICT_CODES = {"valid": 0, "invalid": 1, "unknown": 2}


@dataclass(frozen=True)
class SuiteResult:
    scenario: Path
    expected: str
    exit_code: int
    run_dir: Path | None

    @property
    def passed(self) -> bool:
        return self.exit_code == VERDICT_CODES[self.expected]


def scenario_files(paths: list[Path]) -> list[Path]:
    """Scenario files named directly, and every `*.toml` in the directories named, in
    name order; a path that is neither is bad input."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(path.glob("*.toml"))
            if not found:
                raise BadInput(f"{path}: no scenario files (*.toml) in this directory")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            raise BadInput(f"{path}: no such scenario file or directory")
    return files


def run_suite(files: list[Path], options: RunOptions, console: Console) -> list[SuiteResult]:
    expected = {f: resolve(RunOptions(f, options.seed, options.backend))[0].expected
                for f in files}
    results = []
    for number, scenario in enumerate(files, start=1):
        console.print(f"suite: {number}/{len(files)} {scenario}", markup=False)
        try:
            outcome = run_scenario(RunOptions(scenario, options.seed, options.backend,
                                              options.runs_dir), console)
        except StarquakeError as exc:
            if exc.exit_code != ENVIRONMENT:
                raise
            console.print(f"suite: {scenario} could not run: {exc}", markup=False)
            results.append(SuiteResult(scenario, expected[scenario], exc.exit_code, None))
            continue
        print_summary(console, outcome)
        results.append(SuiteResult(scenario, expected[scenario], outcome.exit_code,
                                   outcome.run_dir))
    return results


@click.command()
@click.argument("paths", nargs=-1, required=True,
                type=click.Path(path_type=Path))
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="One seed for every run [each scenario's, else random; recorded].")
@click.option("--backend", type=click.Choice(("docker", "local")), default=None,
              help="Overrides every scenario's topology.backend.")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the runs, index.html and junit.xml go "
                   "[runs/suite-<timestamp>].")
def suite(paths: tuple[Path, ...], seed: int | None, backend: str | None,
          runs_dir: Path | None) -> int:
    """Run every scenario in PATHS (files, or directories of *.toml), then write
    index.html and junit.xml beside the runs.

    Exits 0 when every run ended with its expected verdict, 1 when one did not, 3 on a bad
    scenario (before anything runs), 4 when a run could not finish.
    """
    from reports.suite import write_suite_index

    console = Console()
    files = scenario_files(list(paths))
    top = runs_dir or Path("runs") / f"suite-{time.strftime('%Y%m%d-%H%M%S')}"
    results = run_suite(files, RunOptions(files[0], seed, backend, top), console)
    finished = [r.run_dir for r in results if r.run_dir is not None]
    if finished:
        index, junit = write_suite_index(finished, top)
        console.print(f"suite: index {index}\nsuite: junit {junit}", markup=False)
    for result in results:
        mark = "pass" if result.passed else "FAIL"
        console.print(f"  {mark}  {result.scenario}  expected {result.expected}, "
                      f"exit {result.exit_code}", markup=False)
    if any(r.run_dir is None for r in results):
        return ENVIRONMENT
    return VALID if all(r.passed for r in results) else INVALID
