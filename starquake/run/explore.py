"""`starquake explore`: runs of whole scenarios drawn from seeds (scenarios/draw.py), one
after another, each judged, then indexed as `starquake suite` indexes its runs.

Each seed's scenario is written to `RUNS/scenarios/explore-<seed>.toml` before the first run
starts, an ordinary scenario file: `starquake run` of it repeats the run, and its run
directory's `scenario.toml` lets `starquake reproduce` do the same. A drawn scenario
expects `valid`: with `--mutants` on, an `invalid` run is a catch. docs/explore.md.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import click

from checkers.spark_settings import SparkSettings, spark_options
from harness.backends import BACKENDS
from history.errors import ENVIRONMENT, INVALID, VALID, BadInput
from scenarios.draw import KINDS, draw_scenario
from scenarios.format import scenario_toml
from starquake.output import command_console
from starquake.run.pipeline import RunOptions
from starquake.run.suite import SuiteResult, run_suite

_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smh]?)")
_UNIT_S = {"": 1, "s": 1, "m": 60, "h": 3600}


class Duration(click.ParamType):
    """`90s`, `15m`, `2h`, or a number of seconds."""

    name = "duration"

    def convert(self, value: object, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        found = _DURATION.fullmatch(str(value).strip())
        if found is None:
            self.fail(f"{value!r}: expected a duration such as 90s, 15m or 2h", param, ctx)
        return float(found[1]) * _UNIT_S[found[2]]


def explore_seeds(seeds: int | None, seed: int | None, first_seed: int) -> list[int]:
    if seed is not None and seeds is not None:
        raise BadInput("give --seeds or --seed, not both")
    return [seed] if seed is not None else list(range(first_seed, first_seed + (seeds or 1)))


def write_drawn(seeds: list[int], backend: str, mutants: tuple[str, ...],
                directory: Path) -> list[Path]:
    """Each seed's drawn scenario as a file in `directory`, read back through the scenario
    reader by the runs (so a drawn scenario is held to the format as any other)."""
    directory.mkdir(parents=True, exist_ok=True)
    files = []
    for number in seeds:
        scenario = draw_scenario(number, backend, mutants=mutants, kinds=KINDS)
        path = directory / f"{scenario.name}.toml"
        path.write_text(scenario_toml(scenario))
        files.append(path)
    return files


@click.command()
@click.option("--seeds", type=click.IntRange(min=1), default=None,
              help="Draw and run this many scenarios, seeds --first-seed onwards [1].")
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="Draw and run the one scenario of this seed.")
@click.option("--first-seed", type=click.IntRange(min=0), default=1, show_default=True)
@click.option("--budget", type=Duration(), default=None,
              help="Start no run after this long (90s, 15m, 2h); the runs begun finish.")
@click.option("--backend", type=click.Choice(tuple(BACKENDS)), default="docker",
              show_default=True, help="What the drawn topologies are deployed on.")
@click.option("--mutants", default="", metavar="M,...",
              help="Switch these mutants of the reference implementation on in every run.")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the drawn scenarios, the runs, index.html and junit.xml go "
                   "[runs/explore-<timestamp>].")
@spark_options
def explore(seeds: int | None, seed: int | None, first_seed: int, budget: float | None,
            backend: str, mutants: str, runs_dir: Path | None, spark: SparkSettings) -> int:
    """Draw whole scenarios from seeds (workload, knobs, topology, faults, liveness bound)
    and run each, then write index.html and junit.xml beside the runs (docs/explore.md).

    Exits 0 when every run is valid, 1 when one is invalid (with --mutants, a catch),
    2 when one is unknown and none invalid, 3 on bad input, 4 when a run could not finish.
    """
    from reports.suite import write_suite_index

    console = command_console()
    top = runs_dir or Path("runs") / f"explore-{time.strftime('%Y%m%d-%H%M%S')}"
    names = tuple(m.strip() for m in mutants.split(",") if m.strip())
    files = write_drawn(explore_seeds(seeds, seed, first_seed), backend, names,
                        top / "scenarios")
    started = time.monotonic()
    results: list[SuiteResult] = []
    for result in run_suite(files, RunOptions(files[0], backend=backend, runs_dir=top,
                                              spark=spark), console,
                            keep_going=lambda: budget is None
                            or time.monotonic() - started < budget):
        results.append(result)
    finished = [r.run_dir for r in results if r.run_dir is not None]
    if finished:
        index, junit = write_suite_index(finished, top)
        console.print(f"explore: index {index}\nexplore: junit {junit}", markup=False)
    for result in results:
        console.print(f"  {_verdict(result)}  {result.scenario}", markup=False)
    if len(results) < len(files):
        console.print(f"explore: budget spent after {len(results)} of {len(files)} runs",
                      markup=False)
    codes = {r.exit_code for r in results}
    if INVALID in codes:
        return INVALID
    if any(r.run_dir is None for r in results):
        return ENVIRONMENT
    return max(codes, default=VALID)


def _verdict(result: SuiteResult) -> str:
    return {0: "valid  ", 1: "INVALID", 2: "unknown"}.get(result.exit_code, "no run ")
