"""A scenario as a pytest item: its run, and the verdict held against the one it expects.

An item runs its scenario through the run pipeline (`starquake.run.pipeline.run`), the
code path of `starquake run`, in pytest's own process: the cluster is deployed and torn
down by the pipeline, the history judged by a `starquake check-worker` child (so no JVM
shares the process with pytest), and SIGTERM turned into Ctrl-C for the run, which needs
the main thread: pytest runs items there. Every item of a session shares one check worker,
as the runs of `starquake suite` do, so the Spark session starts once.

The run is the item's setup and the comparison its test, so pytest's outcomes say what
happened: the expected verdict (with every expected anomaly) passes; another decided
verdict fails, its message the one-line verdict, the anomalies with counts and first
examples, the seed, the command that reproduces the run and the report; a verdict of
`unknown` the scenario does not expect, or a run that could not finish (bad input, no
Docker engine), is an error.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from history.errors import StarquakeError
from history.version import starquake_version
from reports.run_dir import RunDirectory, load_run
from scenarios.catalogue import packaged_scenarios, resolve_suite
from scenarios.format import Scenario, ScenarioError, load_scenario
from starquake.pytest_plugin import RUNS, PluginRuns
from starquake.run.pipeline import RunInterrupted, RunOutcome
from starquake.run.pipeline import run as run_scenario

INTERRUPTED = 130
EXAMPLE_CHARS = 300
"""How much of each first example a failure's message shows (the report has them all)."""


def item_name(label: str, seed: int | None) -> str:
    """`smoke/topic-kill[seed=1]`: the seed the run will use, `random` when it is drawn at
    run time (an id must not change between collections, nor between xdist's workers)."""
    return f"{label}[seed={'random' if seed is None else seed}]"


class ScenarioFile(pytest.File):
    """A scenario file named on the command line: one item."""

    def collect(self) -> Iterator[ScenarioItem]:
        try:
            scenario = load_scenario(self.path)
        except ScenarioError as exc:
            raise self.CollectError(str(exc)) from None
        yield ScenarioItem.for_scenario(self, self.path, scenario, scenario.name)


class ScenarioNames(pytest.Collector):
    """The scenarios `--starquake` names: packaged suites and scenarios by their names,
    files and directories by their paths (`scenarios.catalogue.resolve_suite`)."""

    def __init__(self, *, names: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.names = names

    def collect(self) -> Iterator[ScenarioItem]:
        packaged = {path.resolve(): name for name, path in packaged_scenarios().items()}
        for text in self.names:
            try:
                scenarios = [(file, load_scenario(file)) for file in resolve_suite(text)]
            except ScenarioError as exc:
                raise self.CollectError(f"--starquake {exc}") from None
            for file, scenario in scenarios:
                label = (packaged.get(file.resolve())
                         or relative_label(file.resolve(), self.config.rootpath))
                yield ScenarioItem.for_scenario(self, file, scenario, label)


class ScenarioItem(pytest.Item):
    """One run of one scenario (see the module's docstring for its outcomes)."""

    def __init__(self, *, scenario_file: Path, scenario: Scenario, seed: int | None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario_file = scenario_file
        self.scenario = scenario
        self.seed = seed
        self.run_dir: RunDirectory | None = None

    @classmethod
    def for_scenario(cls, parent: pytest.Collector, path: Path, scenario: Scenario,
                     label: str) -> ScenarioItem:
        """The item of `scenario` (read from `path`) under `parent`: a file named on the
        command line, or the `--starquake` names, whose items' ids are their names alone
        (`smoke/topic-kill[seed=1]`), wherever the package is installed."""
        seed = parent.config.stash[RUNS].seed
        seed = seed if seed is not None else scenario.seed
        name = item_name(label, seed)
        nodeid = name if isinstance(parent, ScenarioNames) else None
        item: ScenarioItem = cls.from_parent(parent, name=name, nodeid=nodeid, path=path,
                                             scenario_file=path, scenario=scenario, seed=seed)
        return item

    def setup(self) -> None:
        """The run: deploy, load under faults, judge, report."""
        runs = self.config.stash[RUNS]
        self.user_properties.append(("starquake_version", starquake_version()))
        outcome = self._run(runs)
        if isinstance(outcome, str):  # failed outside an `except`: the one line shows alone
            pytest.fail(outcome, pytrace=False)
        self.run_dir = load_run(outcome.run_dir)
        self.user_properties += [("run_dir", str(outcome.run_dir)),
                                 ("seed", str(self.run_dir.seed)),
                                 ("verdict", self.run_dir.verdict)]
        if outcome.report is not None:
            self.user_properties.append(("report", str(outcome.report)))
        if self.run_dir.verdict == "unknown" and self.run_dir.expected != "unknown":
            pytest.fail(failure_message(self.name, self.run_dir), pytrace=False)

    def _run(self, runs: PluginRuns) -> RunOutcome | str:
        """The run's outcome, or why it could not finish (starquake's one-line message)."""
        try:
            return run_scenario(runs.options(self.scenario_file, self.seed),
                                Console(soft_wrap=True), runs.checks())
        except RunInterrupted as exc:
            pytest.exit(str(exc), returncode=INTERRUPTED)
        except StarquakeError as exc:
            return f"{self.name}: could not run: {exc}"

    def runtest(self) -> None:
        assert self.run_dir is not None
        if not self.run_dir.met_expectation:
            pytest.fail(failure_message(self.name, self.run_dir), pytrace=False)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.scenario_file, None, f"starquake scenario {self.name}"


def failure_message(name: str, run: RunDirectory) -> str:
    """What a CI log must show of a run that missed its expected verdict."""
    anomalies = run.anomalies()
    missing = run.missing_anomalies
    wanted = f" with {', '.join(missing)}" if missing else ""
    found = ", ".join(f"{n}={c}" for n, c in anomalies.items()) or "no anomalies"
    lines = [f"{name}: expected {run.expected}{wanted}, got {run.verdict} ({found})"]
    checkers = run.results.get("checkers", {})
    for checker in anomalies:
        examples = checkers[checker].get("examples") or []
        lines.append(f"  {checker}: {anomalies[checker]}")
        lines += [f"    e.g. {_shortened(example)}" for example in examples[:2]]
    undecided = [n for n, c in checkers.items() if c.get("valid") == "unknown"]
    if undecided:
        lines.append("  undecided: " + ", ".join(
            f"{n} ({checkers[n].get('reason') or 'no reason given'})" for n in undecided))
    command, _ = run.reproduce
    lines += [f"  seed: {run.seed}", f"  reproduce: {command or 'unknown'}",
              f"  run directory: {run.path}"]
    report = run.path / "report.html"
    if report.is_file():
        lines.append(f"  report: {report}")
    return "\n".join(lines)


def _shortened(example: object) -> str:
    text = json.dumps(example, default=str, separators=(", ", ": "))
    return text if len(text) <= EXAMPLE_CHARS else text[:EXAMPLE_CHARS - 3] + "..."


def relative_label(path: Path, root: Path) -> str:
    """A scenario file's label: its path from `root` (without `.toml`) when below it."""
    shown = os.path.relpath(path, root) if path.is_relative_to(root) else str(path)
    return shown.removesuffix(".toml")
