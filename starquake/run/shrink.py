"""`starquake shrink RUN`: a smaller scenario that still makes the anomaly of an invalid run.

A greedy search, as Hypothesis shrinks a failing example: from the run's scenario (its seed
kept, so faults come at the same times), try each smaller neighbour (scenarios/shrink.py)
in turn, each run up to `--tries` times because timing is not deterministic, and move to
the first one any try of which shows the anomaly; stop when no neighbour does, or the
budget is spent. Then the smallest scenario found is run `--tries` times more, to say how
often it fails. Everything goes under OUT: the scenario of each step, every run, the
smallest scenario (`shrunk.toml`) and a report (`shrink.md`). docs/explore.md.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path

import click
from rich.console import Console

from checkers.spark_settings import SparkSettings, spark_options
from history.errors import ENVIRONMENT, UNKNOWN, VALID, BadInput, StarquakeError
from reports.run_dir import found_anomalies, load_run
from scenarios.format import Scenario, ScenarioError, load_scenario, scenario_toml
from scenarios.plan import schedule_for
from scenarios.shrink import candidates, size
from starquake.duration_option import Duration
from starquake.output import command_console
from starquake.run.check_worker import CheckWorker
from starquake.run.pipeline import RunOptions
from starquake.run.pipeline import run as run_scenario


@dataclass
class Search:
    """The search's state: where it writes, what it keeps, and what it tried."""

    out: Path
    seed: int
    anomaly: str
    tries: int
    checks: CheckWorker
    console: Console
    steps: int = 0
    tried: list[tuple[str, int, int]] = field(default_factory=list)
    """(what was removed, tries made, tries that showed the anomaly), in order."""

    def write(self, scenario: Scenario) -> Path:
        self.steps += 1
        path = self.out / "candidates" / f"step-{self.steps:03d}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(scenario_toml(dataclasses.replace(scenario, path=path)))
        return path

    def shows_anomaly(self, path: Path, stop_at_first: bool = True) -> tuple[int, int]:
        """(runs made, runs that showed the anomaly) of up to `tries` runs of `path`; the
        first that shows it ends the tries unless `stop_at_first` is off."""
        made = caught = 0
        for _ in range(self.tries):
            made += 1
            outcome = run_scenario(RunOptions(path, seed=self.seed, runs_dir=self.out / "runs"),
                                   self.console, self.checks)
            if self.anomaly in found_anomalies(outcome.results):
                caught += 1
                if stop_at_first:
                    break
        return made, caught


def valid_candidate(path: Path, seed: int) -> bool:
    """Whether the neighbour written at `path` is a scenario a run can take: read back,
    its faults planned over its nodes."""
    try:
        schedule_for(load_scenario(path), seed)
    except ScenarioError:
        return False
    return True


def shrink_scenario(search: Search, start: Scenario, budget: float | None
                    ) -> tuple[Scenario, list[str]]:
    """The smallest scenario the search reaches from `start`, and what it removed."""
    started = time.monotonic()
    current, removed = start, list[str]()
    while budget is None or time.monotonic() - started < budget:
        for what, neighbour in candidates(current):
            if size(neighbour) >= size(current):
                continue
            path = search.write(neighbour)
            if not valid_candidate(path, search.seed):
                continue
            made, caught = search.shows_anomaly(path)
            search.tried.append((what, made, caught))
            if caught:
                current, removed = load_scenario(path), [*removed, what]
                break
            if budget is not None and time.monotonic() - started >= budget:
                return current, removed
        else:
            return current, removed
    return current, removed


def report(run: Path, original: Scenario, shrunk: Scenario, removed: list[str],
           search: Search, final_caught: int) -> str:
    lines = [f"# Shrinking {run}", "",
             f"Anomaly kept: `{search.anomaly}`; seed {search.seed}; each candidate tried up "
             f"to {search.tries} times.", "",
             f"Size {size(original):.1f} -> {size(shrunk):.1f} "
             f"(faults, seconds, nodes, clients, keys, rate and knobs set: scenarios/shrink.py).",
             "", "Removed, in order:", ""]
    lines += [f"- {what}" for what in removed] or ["- nothing: no smaller neighbour failed"]
    lines += ["", f"The smallest scenario (`shrunk.toml`) showed `{search.anomaly}` in "
              f"{final_caught} of {search.tries} runs.", "", "Every candidate tried:", "",
              "| removed | tries | showed the anomaly |", "| --- | --- | --- |"]
    lines += [f"| {what} | {tries} | {caught} |" for what, tries, caught in search.tried]
    return "\n".join(lines) + "\n"


@click.command()
@click.argument("run", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--tries", type=click.IntRange(min=1), default=2, show_default=True,
              help="Runs of each candidate; it is kept when any shows the anomaly.")
@click.option("--budget", type=Duration(), default=None,
              help="Try no new candidate after this long (15m, 2h).")
@click.option("--anomaly", default=None,
              help="The checker whose anomaly must stay [the run's largest].")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the steps, runs and report go [beside RUN's scenario directory].")
@spark_options
def shrink(run: Path, tries: int, budget: float | None, anomaly: str | None,
           out: Path | None, spark: SparkSettings) -> int:
    """Search for a smaller scenario than RUN's that still makes its anomaly: fewer faults,
    a shorter run, knobs back to their defaults, fewer clients, keys and nodes.

    Exits 0 when the smallest scenario found showed the anomaly again, 2 when it did not
    in its final runs, 3 on bad input (RUN is no invalid run, or lacks the anomaly named),
    4 when a run could not finish.
    """
    found = load_run(run)
    anomalies = found.anomalies()
    if found.verdict != "invalid" or not anomalies:
        raise BadInput(f"{run}: not an invalid run (verdict {found.verdict}): nothing to shrink")
    wanted = anomaly or max(anomalies, key=lambda name: anomalies[name])
    if wanted not in anomalies:
        raise BadInput(f"{run}: no {wanted} anomaly in it; it has {', '.join(anomalies)}")
    original = load_scenario(run / "scenario.toml")
    seed = found.seed if found.seed is not None else original.seed
    if seed is None:
        raise BadInput(f"{run}: no seed recorded")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = out or run.resolve().parent.parent / f"shrink-{original.name}-{stamp}"
    console = command_console()
    try:
        with CheckWorker(spark) as checks:
            search = Search(out, seed, wanted, tries, checks, console)
            shrunk, removed = shrink_scenario(search, original, budget)
            final = search.write(shrunk)
            final_caught = search.shows_anomaly(final, stop_at_first=False)[1]
    except StarquakeError as exc:
        if exc.exit_code == ENVIRONMENT:
            console.print(f"shrink: a run could not finish: {exc}", markup=False)
        raise
    (out / "shrunk.toml").write_text(scenario_toml(dataclasses.replace(shrunk, path=final)))
    (out / "shrink.md").write_text(report(run, original, shrunk, removed, search,
                                          final_caught))
    console.print(f"shrink: size {size(original):.1f} -> {size(shrunk):.1f}, "
                  f"{len(removed)} steps; {wanted} in {final_caught} of {tries} final runs\n"
                  f"shrink: {out / 'shrunk.toml'}\nshrink: {out / 'shrink.md'}", markup=False)
    return VALID if final_caught else UNKNOWN
