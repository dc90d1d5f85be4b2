"""`starquake detect`: the detection table, regenerated rather than written by hand.

Each mutant scenario runs once per seed 1..N, and so does its clean twin (its mutants
off, expecting valid) in the first `--twin-seeds` of those seeds (all by default: a twin
per seed is the stronger check, fewer halve a long detect). Per scenario the table gives
in how many seeds the mutant was caught (the run met its expectation: `invalid` through
every anomaly the scenario names), the median time from the run's first event to the
first that completed one of those anomalies, and in how many seeds the twin was valid.
A catch that needs luck, or a twin that is not clean, shows here before a user relies on
the scenario.

Scenarios that expect `valid` (the smoke suite) are the false-alarm check: each runs once
per seed against the reference implementation as it is, and the table gives in how many
seeds it was valid and which anomalies the others reported. The two tables are sections
of one file, each between markers of its own, so regenerating one keeps the other.

With `--explore`, the mutant table also says how soon scenarios drawn from seeds, written
for no bug, catch each mutant, beside a control of those scenarios with no mutant on
(starquake/run/detect_explore.py); `--explore-only` runs just that, into sections of its
own.

A table over ten seeds takes hours. Each judged run goes into the detect's ledger
(starquake/run/detect_ledger.py) at once; with `--resume`, a run the ledger holds for the
same scenario, seed and mutants is counted instead of run again, so an interrupted detect
goes on where it stopped, in the same sitting or a later one. Every row must come from
one version of the code: the ledger names the source it was started from, and resuming
from other source is refused.
"""

from __future__ import annotations

import dataclasses
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click
from rich.console import Console

from checkers.spark_settings import SparkSettings, spark_options
from harness.backends import BACKENDS
from history.errors import ENVIRONMENT, INVALID, VALID, BadInput
from reports.run_dir import load_run
from scenarios.format import Scenario
from starquake.output import command_console
from starquake.run.detect_ledger import LEDGER, Judged, Ledger
from starquake.run.lanes import memory_problem
from starquake.run.pipeline import RunOptions, resolve
from starquake.run.suite import SuiteResult, run_suite, scenario_files


@dataclass(frozen=True)
class Detection:
    """One scenario's row: what it switches on and must show, and its runs."""

    scenario: str
    workload: str
    backend: str
    """Where its runs deploy (the scenario's backend, or `--backend`)."""
    mutants: tuple[str, ...]
    anomalies: tuple[str, ...]
    caught: list[bool]
    first_anomaly_s: list[float]
    """Per caught run: seconds from its first event to its earliest expected anomaly."""
    twins_valid: list[bool]

    def row(self, *more: str) -> str:
        median = (f"{statistics.median(self.first_anomaly_s):.1f}"
                  if self.first_anomaly_s else "-")
        return (f"| `{self.scenario}` | {mutants_cell(self.mutants)} | "
                f"{', '.join(self.anomalies)} | {sum(self.caught)}/{len(self.caught)} | "
                f"{median} | {sum(self.twins_valid)}/{len(self.twins_valid)} |"
                + "".join(f" {cell} |" for cell in more))


def mutants_cell(mutants: tuple[str, ...]) -> str:
    """A mutant scenario's mutants as the detection tables show them, in either table."""
    return ", ".join(f"`{m}`" for m in mutants)


@dataclass(frozen=True)
class Columns:
    """Columns the mutant table gains from runs of another kind (the explore column,
    starquake/run/detect_explore.py): what they mean, their heads, a row's cells, and
    lines for below the table."""

    meaning: list[str]
    heads: tuple[str, ...]
    cells: Callable[[Detection], tuple[str, ...]]
    below: list[str]


@dataclass(frozen=True)
class Clean:
    """A scenario that expects `valid`: in how many seeds it was, and what the others
    reported instead (`reported`)."""

    scenario: str
    valid: list[bool]
    alarms: list[str]

    def row(self) -> str:
        alarms = ", ".join(sorted(set(self.alarms))) or "-"
        return f"| `{self.scenario}` | {sum(self.valid)}/{len(self.valid)} | {alarms} |"


UNDECIDED = " unknown"
"""What `reported` appends to a checker that could not decide."""
COULD_NOT_FINISH = "exit "
"""What `reported` puts before the exit code of a run that could not finish."""


def reported(result: SuiteResult) -> list[str]:
    """What a run that should have been valid reported: its failed checkers, else the
    checkers that could not decide (`unknown`), else its exit code (a run that could not
    finish has no checkers)."""
    if result.run_dir is not None:
        checkers = load_run(result.run_dir).results.get("checkers", {})
        failed = [name for name, verdict in checkers.items() if verdict.get("valid") is False]
        if failed:
            return failed
        undecided = [name for name, verdict in checkers.items()
                     if verdict.get("valid") == "unknown"]
        if undecided:
            return [f"{name}{UNDECIDED}" for name in undecided]
    return [f"{COULD_NOT_FINISH}{result.exit_code}"]


def reported_invalid(said: tuple[str, ...]) -> bool:
    """Whether what `reported` said of a run is a checker's failure (the run was
    `invalid`), rather than checkers that could not decide or an exit code."""
    return bool(said) and not any(item.endswith(UNDECIDED) or item.startswith(COULD_NOT_FINISH)
                                  for item in said)


def first_anomaly_s(run_dir: Path, anomalies: tuple[str, ...]) -> float | None:
    """Seconds from the run's first event to the first moment its history held an example
    of the named anomalies (a checker keeps its first examples, in event order)."""
    import pyarrow.parquet as pq

    run = load_run(run_dir)
    examples = [example["events"]
                for name in anomalies
                for example in run.results.get("checkers", {}).get(name, {}).get("examples", [])
                if example.get("events")]
    times = pq.read_table(run_dir / "history.parquet", columns=["index", "time"]).to_pydict()
    return earliest_observation_s(examples, dict(zip(times["index"], times["time"],
                                                     strict=True)))


def earliest_observation_s(examples: list[list[int]], at: dict[int, int]) -> float | None:
    """An example's events run from its context to the event that completes the anomaly
    (a `lost` example: the subscription's `subscribe`, then the send's invoke and `ok`;
    an `order` one: the newer send's invoke, the older one's `ok`, and both deliveries,
    the older one's last): the history holds it from its last event. The earliest such
    moment over the examples, in seconds from the run's first event (`at`: event index ->
    time in nanoseconds); None without an example."""
    seen = [max(at[i] for i in events) for events in examples if all(i in at for i in events)]
    return (min(seen) - min(at.values())) / 1e9 if seen else None


def source_version() -> str:
    """Which code the runs come from: the git commit of the checkout starquake runs from
    (`-dirty` when it has uncommitted changes), else the installed package's version."""
    import importlib.metadata

    checkout = Path(__file__).resolve().parents[2]
    if (checkout / ".git").exists():
        described = subprocess.run(
            ["git", "-C", str(checkout), "describe", "--always", "--dirty", "--abbrev=12"],
            capture_output=True, text=True, check=False)
        if described.returncode == 0:
            return f"commit {described.stdout.strip()}"
    return f"starquake {importlib.metadata.version('starquake')}"


def judged(result: SuiteResult, scenario: Scenario, seed: int, twin: bool) -> Judged:
    """What the tables count of a finished run: whether it passed, what it reported when
    it did not, and for a caught mutant how soon its first named anomaly came."""
    first = (first_anomaly_s(result.run_dir, scenario.expected_anomalies)
             if result.passed and not twin and result.run_dir is not None else None)
    return Judged(scenario.name, seed, () if twin else scenario.mutants, result.passed,
                  () if result.passed else tuple(reported(result)), first,
                  str(result.run_dir or ""))


def detections(mutant_files: list[Path], clean_files: list[Path], seeds: int,
               twin_seeds: int, options: RunOptions, console: Console, ledger: Ledger,
               parallel: int = 1) -> tuple[list[Detection], list[Clean], bool]:
    """Every mutant scenario's row, every clean scenario's row, and whether every run
    could finish; twins run in seeds 1..`twin_seeds` only, `parallel` runs at a time. A
    run the ledger already holds
    counts as it ended and is not run again; every other run is added to the ledger as
    soon as it is judged (a run that could not finish is not: a resume tries it again)."""
    scenarios = {f: resolve(dataclasses.replace(options, scenario=f))[0]
                 for f in mutant_files + clean_files}
    rows = {f: Detection(s.name, s.workload.kind, s.topology.backend, s.mutants,
                         s.expected_anomalies, [], [], [])
            for f in mutant_files for s in [scenarios[f]]}
    cleans = {f: Clean(scenarios[f].name, [], []) for f in clean_files}

    def count(file: Path, twin: bool, run: Judged) -> None:
        if file in cleans:
            cleans[file].valid.append(run.passed)
            cleans[file].alarms.extend(run.reported)
        elif twin:
            rows[file].twins_valid.append(run.passed)
        else:
            rows[file].caught.append(run.passed)
            if run.first_anomaly_s is not None:
                rows[file].first_anomaly_s.append(run.first_anomaly_s)

    finished = True
    for seed in range(1, seeds + 1):
        twins = [(mutant_files, True)] if seed <= twin_seeds else []
        for files, twin in [(mutant_files, False), *twins, (clean_files, False)]:
            left = []
            for file in files:
                scenario = scenarios[file]
                earlier = ledger.get(scenario.name, seed, () if twin else scenario.mutants)
                if earlier is None:
                    left.append(file)
                else:
                    count(file, twin, earlier)
            if len(left) < len(files):
                console.print(f"detect: seed {seed}{', twins' if twin else ''}: "
                              f"{len(files) - len(left)} of {len(files)} in the ledger, "
                              f"counted, not run again", markup=False)
            for result in run_suite(left, dataclasses.replace(
                    options, seed=seed, without_mutants=twin), console, parallel=parallel):
                run = judged(result, scenarios[result.scenario], seed, twin)
                if result.run_dir is None:
                    finished = False
                else:
                    ledger.add(run)
                count(result.scenario, twin, run)
    return list(rows.values()), list(cleans.values()), finished


MUTANTS_SECTION = "mutants"
CLEAN_SECTION = "clean"


def generated(command: str, source: str) -> str:
    return (f"Generated by `{command}` on {time.strftime('%Y-%m-%d')}, from {source}; "
            f"regenerate it rather than edit it.")


def table(rows: list[Detection], command: str, source: str,
          more: Columns | None = None) -> str:
    more = more or Columns([], (), lambda _row: (), [])
    return "\n".join([
        "# Detection: each mutant scenario, caught in how many seeds",
        "",
        generated(command, source),
        "*Caught*: the run ended `invalid` with every anomaly its scenario names.",
        "*First anomaly*: the median, over the caught seeds, of the seconds from the run's",
        "first event to the first event that completed one of those anomalies (for `lost`,",
        "the acknowledged send of a message never delivered; for `order`, the delivery of an",
        "older message after a newer one of its key; for `contract`, the failed probe's last",
        "step). *Twin valid*: the same scenario and seed with its mutants off ended `valid`",
        "(in the first `--twin-seeds` seeds when the command names them, else in each).",
        *more.meaning,
        "",
        "| scenario | mutants | anomalies | caught | first anomaly (s) | twin valid |"
        + "".join(f" {head} |" for head in more.heads),
        "| --- | --- | --- | --- | --- | --- |" + " --- |" * len(more.heads),
        *(row.row(*more.cells(row)) for row in rows),
        *(["", *more.below] if more.below else []), ""])


def clean_table(rows: list[Clean], command: str, source: str) -> str:
    runs = sum(len(r.valid) for r in rows)
    alarms = runs - sum(sum(r.valid) for r in rows)
    return "\n".join([
        "## False alarms: scenarios that expect `valid`, run after run",
        "",
        generated(command, source),
        "Each scenario ran once per seed against the system its topology deploys (the",
        "reference implementation, or Apache Pulsar on the `apache-pulsar` backend), with no",
        "mutant on. *Valid*: in how many seeds the verdict was `valid`; *reported*: what",
        "the other runs reported instead (a checker's anomaly; a checker that could not",
        "decide, `unknown`; or the exit code of a run that could not finish). In all:",
        f"{alarms} of {runs} runs not valid.",
        "",
        "| scenario | valid | reported |",
        "| --- | --- | --- |",
        *(row.row() for row in rows), ""])


def with_section(document: str, section: str, text: str) -> str:
    """`document` with its `section` (between `<!-- detect:NAME -->` and
    `<!-- /detect:NAME -->`) replaced by `text`, or `text` so marked at its end."""
    start, end = f"<!-- detect:{section} -->", f"<!-- /detect:{section} -->"
    marked = f"{start}\n{text}{end}\n"
    if start in document and end in document:
        before, rest = document.split(start, 1)
        after = rest.split(end, 1)[1]
        return before + marked + after.removeprefix("\n")
    return (document.rstrip("\n") + "\n\n" if document.strip() else "") + marked


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--seeds", type=click.IntRange(min=1), default=10, show_default=True,
              help="Run each scenario, and its clean twin, with seeds 1 to SEEDS.")
@click.option("--twin-seeds", type=click.IntRange(min=0), default=None,
              help="Run the clean twins with seeds 1 to TWIN_SEEDS only [SEEDS].")
@click.option("--backend", type=click.Choice(tuple(BACKENDS)), default=None,
              help="Overrides every scenario's topology.backend.")
@click.option("--runs-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Where the runs go [runs/detect-<timestamp>].")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the table here (e.g. docs/detection.md) [print it].")
@click.option("--ledger", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help=f"The record of every judged run, one JSON line each, which --resume "
                   f"reads [RUNS_DIR/{LEDGER}].")
@click.option("--resume", is_flag=True,
              help="Count the runs the ledger already holds instead of running them again "
                   "(same code only).")
@click.option("--tables-only", is_flag=True,
              help="Run nothing: write the tables from the ledger's runs, counted by this "
                   "code, naming the code the ledger says they came from; a run the tables "
                   "need that the ledger lacks is an error.")
@click.option("--explore", "explore", flag_value="also", default=None,
              help="Also run the scenarios explore draws from seeds 1..SEEDS with each "
                   "mutant scenario's mutants on, and with none: the explore column and its "
                   "control (docs/explore.md).")
@click.option("--explore-only", "explore", flag_value="only",
              help="Run only the explore column and its control, and write only their "
                   "sections.")
@click.option("--parallel", type=click.IntRange(1, 2), default=1, show_default=True,
              help="Runs at a time, each on a cluster of its own.")
@spark_options
def detect(paths: tuple[Path, ...], seeds: int, twin_seeds: int | None, backend: str | None,
           runs_dir: Path | None, out: Path | None, ledger: Path | None, resume: bool,
           tables_only: bool, explore: str | None, parallel: int,
           spark: SparkSettings) -> int:
    """Run every mutant scenario in PATHS (expecting invalid) with seeds 1..SEEDS and
    its clean twin with seeds 1..TWIN_SEEDS, and every scenario that expects valid with
    seeds 1..SEEDS, and write the detection table and the false-alarm table. With
    --explore, also the scenarios explore draws from seeds 1..SEEDS (on --backend, else
    on each mutant scenario's backend), with each mutant set on and with none;
    --explore-only runs just those.

    Exits 0 when every mutant was caught (by explore: in some seed) and every twin,
    clean scenario and explore control valid in every seed, 1 when not, 3 on a bad
    scenario or ledger, a --resume of runs from other code (before anything runs) or a
    --tables-only whose ledger lacks a run, 4 when a run could not finish.
    """
    console = command_console()
    candidates = scenario_files(list(paths))
    resolved = {f: resolve(RunOptions(f, backend=backend))[0] for f in candidates}
    mutant_files = [f for f in candidates if resolved[f].expected == "invalid"]
    clean_files = [f for f in candidates if resolved[f].expected == "valid"]
    for skipped in sorted(f for f in candidates if resolved[f].expected == "unknown"):
        console.print(f"detect: {skipped} expects unknown, neither a catch nor clean; left "
                      f"out", markup=False)
    if not mutant_files and not clean_files:
        raise BadInput(f"{', '.join(map(str, paths))}: no scenario that expects invalid "
                       f"or valid")
    if (resume or tables_only) and runs_dir is None and ledger is None:
        raise BadInput(f"detect: {'--tables-only' if tables_only else '--resume'} needs the "
                       f"--ledger, or the --runs-dir holding it, of the runs to count")
    if parallel > 1:
        problem = memory_problem(backend or "docker", parallel)
        if problem is not None:
            raise BadInput(problem)
    top = runs_dir or Path("runs") / f"detect-{time.strftime('%Y%m%d-%H%M%S')}"
    record = Ledger(ledger or top / LEDGER, None if tables_only else source_version(), resume)
    source = record.source
    twins = seeds if twin_seeds is None else min(twin_seeds, seeds)
    tailored = explore != "only"
    rows, cleans, finished = detections(
        mutant_files, clean_files, seeds, twins,
        RunOptions((mutant_files or clean_files)[0], None, backend, top, spark=spark), console,
        record, parallel) if tailored else ([], [], True)
    command = " ".join(["starquake detect", *map(str, paths), "--seeds", str(seeds),
                        *(["--twin-seeds", str(twins)] if tailored and twins < seeds else []),
                        *(["--backend", backend] if backend else []),
                        *([f"--explore{'-only' if explore == 'only' else ''}"]
                          if explore else [])])
    more, explored, perfect = None, [], True
    if explore is not None:
        # Imported here, not above: the explore column builds on this module's tables.
        from starquake.run import detect_explore

        found = detect_explore.explorations(
            [(resolved[f].workload.kind, resolved[f].mutants, resolved[f].topology.backend)
             for f in mutant_files],
            seeds, top, spark, console, record, parallel)
        finished, perfect = finished and found.finished, found.perfect
        more = detect_explore.columns(found, seeds) if tailored else None
        explored = detect_explore.sections(
            [] if tailored else [resolved[f] for f in mutant_files], found, seeds, command,
            source)
    sections = ([(MUTANTS_SECTION, table(rows, command, source, more))] if rows else []) + \
        ([(CLEAN_SECTION, clean_table(cleans, command, source))] if cleans else []) + explored
    if out is None:
        for _, text in sections:
            console.print(text, markup=False)
    else:
        document = out.read_text() if out.exists() else ""
        for section, text in sections:
            document = with_section(document, section, text)
        out.write_text(document)
        console.print(f"detect: table {out}", markup=False)
    if not finished:
        return ENVIRONMENT
    perfect = perfect and all(all(r.caught) and all(r.twins_valid) for r in rows) and \
        all(all(c.valid) for c in cleans)
    return VALID if perfect else INVALID
