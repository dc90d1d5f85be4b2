"""The explore column of `starquake detect` (`--explore`, `--explore-only`): how soon
scenarios that nobody wrote for a bug catch it (docs/explore.md).

A mutant scenario catches its mutant because it was written for it. Explore's scenarios
(scenarios/draw.py) are drawn from a seed alone and know nothing of any mutant. A seed
draws one workload, and a mutant breaks the code one workload reaches, so each mutant
scenario's mutants are explored among the workload of that scenario, as a developer who
changed that part of a system would run `starquake explore --workloads KIND`: for each
distinct (workload, mutants) of the mutant scenarios the detect runs the scenarios of seeds
1..N drawn among that workload, with those mutants switched on. A run that ends `invalid`
is a catch, and the seed of the first catch says how much exploring the bug takes. A seed
draws the same scenario whichever mutants are on, so the mutants of one workload are tried
on the same scenarios, and those scenarios with no mutant on are that workload's control:
each should be valid, and one that is not is a false alarm of explore's, listed with what
it reported.

Each set is explored on the backend of its mutant scenario (`--backend` overrides them
all): a scenario written for a bug that needs a network fault deploys containers, and its
mutants are explored where such faults can be drawn. A workload explored on two backends
has a control on each.

The runs go into the detect's ledger as the tailored ones do, keyed by the backend and the
drawn scenario's name (`local/explore-<workload>-<seed>`), the seed and the mutants, a key
no tailored run shares, so `--resume` counts them instead of running them again.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from checkers.spark_settings import SparkSettings
from history.errors import INVALID, VALID
from scenarios.draw import KINDS
from scenarios.format import Scenario
from starquake.run.detect import Columns, generated, mutants_cell, reported, reported_invalid
from starquake.run.detect_ledger import Judged, Ledger
from starquake.run.explore import write_drawn
from starquake.run.pipeline import RunOptions
from starquake.run.suite import SuiteResult, run_suite

EXPLORE_SECTION = "explore"
EXPLORE_CLEAN_SECTION = "explore-clean"
FEW_SEEDS = 3
"""The summary counts the mutants caught this early: a bug explore finds within a few
seeds is one a user's short explore would find too."""
SHARED = "as its control"
"""Said of catches not counted: runs whose every failed checker failed the control too."""
NEVER = "\u2014"
"""The first-catch cell of a mutant explore never caught (an em dash)."""


Explore = tuple[str, tuple[str, ...], str]
"""What one row explores: a workload, the mutants on (none for a control), the backend."""
Control = tuple[str, str]
"""A control's workload and backend."""


@dataclass(frozen=True)
class Explored:
    """One workload and set of mutants under explore: the drawn run of each seed, in seed
    order (`passed`: `invalid`), and what the same seed's control reported when it was
    `invalid` too."""

    workload: str
    mutants: tuple[str, ...]
    backend: str
    runs: list[Judged]
    control_said: dict[int, tuple[str, ...]]

    def caught(self, run: Judged) -> bool:
        """A catch counts unless every checker it reported also failed the same drawn
        scenario with no mutant on: then the scenario, not the mutant, is what they saw."""
        return run.passed and not set(run.reported) <= set(self.control_said.get(run.seed, ()))

    @property
    def first_catch(self) -> int | None:
        return next((run.seed for run in self.runs if self.caught(run)), None)

    def cells(self) -> tuple[str, str, str]:
        first = self.first_catch
        caught = sum(self.caught(run) for run in self.runs)
        shared = sum(run.passed for run in self.runs) - caught
        return (self.backend, f"{caught} of {len(self.runs)}"
                + (f" (+{shared} {SHARED})" if shared else ""),
                NEVER if first is None else str(first))


@dataclass(frozen=True)
class Exploration:
    """Every (workload, mutants, backend)'s runs, each (workload, backend)'s control (the
    same seeds, no mutant on; `passed` is valid), and whether every run could finish."""

    sets: dict[Explore, Explored]
    control: dict[Control, list[Judged]]
    finished: bool

    def cells(self, workload: str, mutants: tuple[str, ...], backend: str) -> tuple[str, ...]:
        """A mutant scenario's cells; dashes for one with no mutant to switch on (it
        expects `invalid` of the reference implementation as it is)."""
        return self.sets[(workload, mutants, backend)].cells() if mutants else \
            (backend, "-", "-")

    @property
    def control_runs(self) -> list[Judged]:
        return [run for runs in self.control.values() for run in runs]

    @property
    def perfect(self) -> bool:
        """Every set caught in some seed (not in each: a drawn scenario need not reach the
        code a mutant breaks), and every control run valid."""
        return all(e.first_catch is not None for e in self.sets.values()) and \
            all(run.passed for run in self.control_runs)


def ledger_name(drawn: Path, backend: str) -> str:
    """A drawn run's scenario in the ledger: a seed draws another scenario on each backend
    under the same name."""
    return f"{backend}/{drawn.stem}"


def judged_drawn(result: SuiteResult, seed: int, mutants: tuple[str, ...],
                 backend: str) -> Judged:
    """A drawn run as the column counts it. With mutants on it passes when it is caught
    (`invalid`; `unknown` is not a catch), without when it is `valid`. It keeps what it
    reported whenever it was not valid: a catch's anomalies, a false alarm's."""
    passed = result.exit_code == (INVALID if mutants else VALID)
    said = () if result.exit_code == VALID else tuple(reported(result))
    return Judged(ledger_name(result.scenario, backend), seed, mutants, passed, said, None,
                  str(result.run_dir or ""))


def explorations(explored: list[Explore], seeds: int, top: Path, spark: SparkSettings,
                 console: Console, ledger: Ledger, parallel: int = 1) -> Exploration:
    """Seeds 1..`seeds` of explore, each (workload, mutants, backend) of `explored` drawn
    for its backend among its workload with its mutants on, and each of those workloads
    with none on each backend. Every drawn scenario is written before the first run
    (`TOP/explore/<backend>/<workload>/<mutants>/explore-<workload>-<seed>.toml`,
    `no-mutant` for a control); the runs go to `TOP/explore-<workload>-<seed>/`, a seed's
    runs together (`parallel` at a time), each run's scenario.toml and ledger line naming
    its mutants. As the tailored runs, a run the ledger holds is counted and not run
    again, and a run that could not finish is not added to the ledger."""
    sets = [*dict.fromkeys(key for key in explored if key[1])]
    controls = sorted({(kind, backend) for kind, _, backend in sets},
                      key=lambda c: (KINDS.index(c[0]), c[1]))
    every = sets + [(kind, (), backend) for kind, backend in controls]
    drawn = {key: write_drawn(list(range(1, seeds + 1)), key[2], key[1],
                              top / "explore" / key[2] / key[0]
                              / ("+".join(key[1]) or "no-mutant"),
                              workloads=(key[0],))
             for key in every}
    runs: dict[Explore, list[Judged]] = {key: [] for key in every}
    finished = True
    for seed in range(1, seeds + 1):
        files = {drawn[key][seed - 1]: key for key in every}
        left = []
        for file, key in files.items():
            earlier = ledger.get(ledger_name(file, key[2]), seed, key[1])
            if earlier is None:
                left.append(file)
            else:
                runs[key].append(earlier)
        if len(left) < len(files):
            console.print(f"detect: explore seed {seed}: {len(files) - len(left)} of "
                          f"{len(files)} in the ledger, counted, not run again", markup=False)
        # No backend override: each drawn file names its own.
        options = RunOptions(next(iter(files)), runs_dir=top, spark=spark)
        for result in run_suite(left, options, console, parallel=parallel):
            key = files[result.scenario]
            run = judged_drawn(result, seed, key[1], key[2])
            if result.run_dir is None:
                finished = False
            else:
                ledger.add(run)
            runs[key].append(run)
    control = {(kind, backend): runs[(kind, (), backend)] for kind, backend in controls}
    control_said = {kind_backend: {run.seed: run.reported for run in control_runs
                                   if reported_invalid(run.reported)}
                    for kind_backend, control_runs in control.items()}
    return Exploration({key: Explored(*key, runs[key], control_said[(key[0], key[2])])
                        for key in sets}, control, finished)


def meaning(seeds: int) -> list[str]:
    return [
        f"*Caught by explore*: in how many of seeds 1 to {seeds} the scenario `starquake",
        "explore --workloads KIND --backend B` draws from the seed, KIND the workload of the",
        "row's scenario and B its backend (*explored on*), run with the row's mutants on,",
        "ended `invalid` (with any anomaly: a drawn scenario names none); *first catch at",
        f"seed*: the lowest such seed, {NEVER} when none. Rows of one workload and backend",
        "run the same drawn scenarios, and rows with the same workload, mutants and backend",
        "share their runs. A run `invalid` only by checkers that also failed the same seed's",
        "control (the drawn scenario with no mutant on) is no catch; such runs are shown as",
        f"\"(+n {SHARED})\".",
    ]


def summary(found: Exploration, seeds: int) -> str:
    """How many (workload, mutants) explore caught at all, how many early, and how soon."""
    firsts = [e.first_catch for e in found.sets.values() if e.first_catch is not None]
    median = f"{statistics.median(firsts):g}" if firsts else NEVER
    early = sum(first <= FEW_SEEDS for first in firsts)
    return (f"Explore caught {len(firsts)} of {len(found.sets)} mutant sets (each with its "
            f"workload and backend) within {seeds} seeds, {early} "
            f"within {FEW_SEEDS} seeds or fewer; median seeds to the first catch, over those "
            f"caught: {median}.")


def columns(found: Exploration, seeds: int) -> Columns:
    """The explore column of the tailored mutant table."""
    return Columns(meaning(seeds), ("explored on", "caught by explore", "first catch at seed"),
                   lambda row: found.cells(row.workload, row.mutants, row.backend),
                   [summary(found, seeds)])


def explore_table(scenarios: list[Scenario], found: Exploration, seeds: int, command: str,
                  source: str) -> str:
    """The explore column alone (`--explore-only`), one row per mutant scenario as in the
    tailored table, which it leaves as it was."""
    return "\n".join([
        "# Detection by explore: each mutant, caught by scenarios drawn from seeds",
        "",
        generated(command, source),
        *meaning(seeds),
        "",
        "| scenario | mutants | explored on | caught by explore | first catch at seed |",
        "| --- | --- | --- | --- | --- |",
        *(f"| `{s.name}` | {mutants_cell(s.mutants)} | "
          f"{' | '.join(found.cells(s.workload.kind, s.mutants, s.topology.backend))} |"
          for s in scenarios),
        "",
        summary(found, seeds),
        ""])


def control_table(found: Exploration, command: str, source: str) -> str:
    """The control: in how many runs the drawn scenario with no mutant was valid, of each
    workload and backend and in all, how many of the others were `invalid`, and each
    false alarm with its seed, workload, backend and what it reported."""
    alarms = [(control, run) for control, runs in found.control.items() for run in runs
              if not run.passed]
    listed = ["| seed | workload | backend | reported |", "| --- | --- | --- | --- |",
              *(f"| {run.seed} | {kind} | {backend} | {', '.join(run.reported) or '-'} |"
                for (kind, backend), run in alarms)] if alarms else ["No false alarm."]
    each = ", ".join(f"{kind} on {backend} {sum(run.passed for run in runs)} of {len(runs)}"
                     for (kind, backend), runs in found.control.items())
    every = found.control_runs
    invalid = sum(reported_invalid(run.reported) for _, run in alarms)
    return "\n".join([
        "## False alarms of explore: the drawn scenarios with no mutant on",
        "",
        generated(command, source),
        "The scenarios the explore column ran, seed for seed and workload for workload, here",
        "with no mutant on, each expecting `valid`. A run that was not is a false alarm:",
        "`invalid` (a checker's anomaly in correct code), `unknown` (a checker that could",
        "not decide) or a run that could not finish (its exit code). Valid in "
        f"{sum(run.passed for run in every)} of {len(every)} runs ({each}); `invalid` in "
        f"{invalid}.",
        "",
        *listed,
        ""])


def sections(scenarios: list[Scenario], found: Exploration, seeds: int, command: str,
             source: str) -> list[tuple[str, str]]:
    """The sections the explore column writes: its own table for the mutant `scenarios`
    (given with `--explore-only`, where the tailored mutant table is not rewritten and
    so cannot carry the column), then the control's."""
    own = [(EXPLORE_SECTION, explore_table(scenarios, found, seeds, command, source))]
    return (own if scenarios else []) + [
        (EXPLORE_CLEAN_SECTION, control_table(found, command, source))]
