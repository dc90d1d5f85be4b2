"""`starquake explore`: runs of whole scenarios drawn from seeds (scenarios/draw.py), one
after another (or two at a time, starquake/run/lanes.py), each judged, then indexed as
`starquake suite` indexes its runs. Each run deploys the drawn topology on a backend, or
aims at a system starquake did not start (`--target`), for which each seed's scenario is
drawn within what it offers (scenarios/offer.py).

Each seed's scenario is written to `RUNS/scenarios/explore-<seed>.toml` before the first run
starts, an ordinary scenario file: `starquake run` of it repeats the run, and its run
directory's `scenario.toml` lets `starquake reproduce` do the same. A drawn scenario
expects `valid`: with `--mutants` on, an `invalid` run is a catch. docs/explore.md.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from pathlib import Path

import click

from checkers.spark_settings import SparkSettings, spark_options
from harness.backends import BACKENDS
from history.errors import ENVIRONMENT, INVALID, VALID, BadInput
from scenarios.draw import KINDS, among, draw_scenario, offered_kinds
from scenarios.format import scenario_toml
from scenarios.offer import Offer, draw_for_offer
from starquake.duration_option import Duration
from starquake.output import command_console
from starquake.run.explore_target import target_command, target_offer
from starquake.run.given_target import reach_target, start_brokers_again
from starquake.run.lanes import memory_problem
from starquake.run.pipeline import RunOptions
from starquake.run.suite import SuiteResult, run_suite

DEFAULT_BACKEND = "docker"
def explore_seeds(seeds: int | None, seed: int | None, first_seed: int) -> list[int]:
    if seed is not None and seeds is not None:
        raise BadInput("give --seeds or --seed, not both")
    return [seed] if seed is not None else list(range(first_seed, first_seed + (seeds or 1)))


def workloads_asked(text: str) -> tuple[str, ...] | None:
    """`--workloads K,...` in `KINDS` order; None, every workload, when it is not given."""
    names = {name.strip() for name in text.split(",") if name.strip()}
    unknown = sorted(names - set(KINDS))
    if unknown:
        raise BadInput(f"--workloads: no workload {', '.join(unknown)}; explore draws among "
                       f"{', '.join(KINDS)}")
    return tuple(kind for kind in KINDS if kind in names) or None


def write_drawn(seeds: list[int], backend: str, mutants: tuple[str, ...],
                directory: Path, offer: Offer | None = None,
                workloads: tuple[str, ...] | None = None) -> list[Path]:
    """Each seed's drawn scenario as a file in `directory` (for the target offering `offer`,
    when one is given; among `workloads` only, when given), read back through the scenario
    reader by the runs (so a drawn scenario is held to the format as any other)."""
    kinds = workloads or KINDS
    offered = offered_kinds(backend, kinds) if offer is None else \
        [kind for kind in offer.kinds if kind in kinds]
    if not offered:
        raise BadInput(f"--workloads {','.join(kinds)}: "
                       + (f"the {backend} backend runs none of them" if offer is None
                          else "the target offers none of them"))
    directory.mkdir(parents=True, exist_ok=True)
    files = []
    for number in seeds:
        scenario = (draw_scenario(number, backend, mutants=mutants, kinds=kinds)
                    if offer is None else draw_for_offer(number, offer, kinds))
        if workloads is not None:
            scenario = among(scenario, workloads)
        path = directory / f"{scenario.name}.toml"
        path.write_text(scenario_toml(scenario))
        files.append(path)
    return files


def check_options(target_file: Path | None, backend: str | None, mutants: tuple[str, ...],
                  parallel: int) -> None:
    """Refuse what cannot be explored together, one line each (exit 3)."""
    if target_file is not None and backend is not None:
        raise BadInput("give --target or --backend, not both: a target file names a system "
                       "already running, a backend one each run deploys")
    if target_file is not None and mutants:
        raise BadInput("--mutants cannot go with --target: mutants are of our reference "
                       "implementation, which a run deploys for itself (--backend)")
    if parallel > 1 and target_file is not None:
        raise BadInput("--parallel 2 cannot go with --target: one system cannot take two "
                       "runs' faults at once without each run disturbing the other")
    if parallel > 1:
        problem = memory_problem(backend or DEFAULT_BACKEND, parallel)
        if problem is not None:
            raise BadInput(problem)


@click.command()
@click.option("--seeds", type=click.IntRange(min=1), default=None,
              help="Draw and run this many scenarios, seeds --first-seed onwards [1].")
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="Draw and run the one scenario of this seed.")
@click.option("--first-seed", type=click.IntRange(min=0), default=1, show_default=True)
@click.option("--budget", type=Duration(), default=None,
              help="Start no run after this long (90s, 15m, 2h); the runs begun finish.")
@click.option("--backend", type=click.Choice(tuple(BACKENDS)), default=None,
              help=f"What the drawn topologies are deployed on [{DEFAULT_BACKEND}].")
@click.option("--target", "target_file", type=click.Path(dir_okay=False, path_type=Path),
              default=None,
              help="Run against the system this target file describes instead "
                   "(docs/testing-your-implementation.md): each scenario is drawn within "
                   "what it offers; nothing of it is started or stopped.")
@click.option("--mutants", default="", metavar="M,...",
              help="Switch these mutants of the reference implementation on in every run.")
@click.option("--workloads", default="", metavar="K,...",
              help=f"Draw among these workloads only (of {', '.join(KINDS)}) [all that the "
                   f"backend or target runs].")
@click.option("--parallel", type=click.IntRange(1, 2), default=1, show_default=True,
              help="Runs at a time, each on a cluster of its own (not with --target).")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the drawn scenarios, the runs, index.html and junit.xml go "
                   "[runs/explore-<timestamp>].")
@spark_options
def explore(seeds: int | None, seed: int | None, first_seed: int, budget: float | None,
            backend: str | None, target_file: Path | None, mutants: str, workloads: str,
            parallel: int, runs_dir: Path | None, spark: SparkSettings) -> int:
    """Draw whole scenarios from seeds (workload, knobs, topology, faults, liveness bound)
    and run each, then write index.html and junit.xml beside the runs (docs/explore.md).
    With --target, each scenario is drawn within what that system offers and run against
    it, one at a time; nothing of it is started or stopped.

    Exits 0 when every run is valid, 1 when one is invalid (with --mutants, a catch),
    2 when one is unknown and none invalid, 3 on bad input, 4 when a run could not finish.
    """
    from reports.suite import write_suite_index

    names = tuple(m.strip() for m in mutants.split(",") if m.strip())
    check_options(target_file, backend, names, parallel)
    kinds = workloads_asked(workloads)
    numbers = explore_seeds(seeds, seed, first_seed)
    console = command_console()
    top = runs_dir or Path("runs") / f"explore-{time.strftime('%Y%m%d-%H%M%S')}"
    target = None if target_file is None else reach_target(target_file)
    offer = None if target is None else target_offer(target, console)
    files = write_drawn(numbers, backend or DEFAULT_BACKEND, names, top / "scenarios", offer,
                        kinds)
    started = time.monotonic()

    between: Callable[[], None] | None = None  # a given target is tended between runs
    command_for: Callable[[Path], str] | None = None
    if target is not None and target_file is not None:
        between = functools.partial(start_brokers_again, target, console)
        command_for = functools.partial(target_command, target_file, top=top, workloads=kinds)
    results: list[SuiteResult] = []
    for result in run_suite(files, RunOptions(files[0], backend=backend, runs_dir=top,
                                              target=target, spark=spark), console,
                            keep_going=lambda: budget is None
                            or time.monotonic() - started < budget,
                            between=between, command_for=command_for, parallel=parallel):
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
