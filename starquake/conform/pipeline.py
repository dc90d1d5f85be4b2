"""`starquake conform`, step by step (docs/testing-your-implementation.md): the target file,
reachability, the system features the target offers, each feature planned (run,
unsupported, skipped), each feature run as an ordinary scenario run aimed at the target,
then `conformance.json`, `conformance.html` and `junit.xml`.

Nothing here starts or stops the system under test: starquake did not start it. Faults
end with the final heal of every run, so the target is left as it was found; after a
feature that has a broker shut itself down (PIP-57), every broker the target lets us start
is started again, as its supervisor would, before the next feature.
"""

from __future__ import annotations

import os
import secrets
import shlex
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from checkers.spark_settings import SparkSettings
from harness.target import Target
from harness.targets.external.features import probe_features
from harness.targets.external.file import FEATURES as SYSTEM_FEATURES
from history.errors import (
    ENVIRONMENT,
    INVALID,
    UNKNOWN,
    VALID,
    StarquakeError,
)
from history.version import starquake_version
from scenarios.format import scenario_toml
from starquake.conform.features import FEATURES, PlannedFeature, plan_feature
from starquake.run.check_worker import CheckWorker
from starquake.run.given_target import reach_target, start_brokers_again
from starquake.run.pipeline import INTERRUPTED, SEED_LIMIT, RunInterrupted, RunOptions
from starquake.run.pipeline import run as run_scenario

STATUS_STYLE = {"pass": "green", "fail": "red", "unknown": "yellow", "error": "yellow",
                "unsupported": "dim", "skipped": "dim", "pending": "", "running": "bold"}


@dataclass(frozen=True)
class ConformOptions:
    target_file: Path
    features: tuple[str, ...] = ()
    """Names from FEATURE_NAMES; empty: every feature."""
    seed: int | None = None
    runs_dir: Path = Path("runs")
    spark: SparkSettings = field(default_factory=SparkSettings)


@dataclass
class Row:
    """One feature's line of the table and of `conformance.json`."""

    feature: str
    checks: str
    status: str
    """pending, running, pass, fail, unknown, error (the run could not finish),
    unsupported or skipped."""
    reason: str = ""
    anomalies: dict[str, int] | None = None
    run: str | None = None
    """The feature's run directory, relative to the conformance directory."""
    report: str | None = None

    def document(self) -> dict[str, Any]:
        return {"feature": self.feature, "checks": self.checks, "status": self.status,
                "reason": self.reason, "anomalies": self.anomalies or {}, "run": self.run,
                "report": self.report}


@dataclass(frozen=True)
class ConformOutcome:
    directory: Path
    rows: list[Row]
    exit_code: int


def conform(options: ConformOptions, console: Console) -> ConformOutcome:
    """Check every selected feature against the target the file describes."""
    target = reach_target(options.target_file)
    spec = target.file
    support = {name: (s.supported, s.why) for name, s in probe_features(target).items()}
    seed = options.seed if options.seed is not None else secrets.randbelow(SEED_LIMIT)
    directory = _directory(options.runs_dir, spec.name, seed)
    shutil.copyfile(options.target_file, directory / "target.toml")
    console.print(f"conformance of {spec.name} ({options.target_file}), seed {seed}: "
                  f"{directory}", markup=False)
    for name in SYSTEM_FEATURES:
        offered, why = support[name]
        console.print(f"  {name}: {'offered' if offered else 'not offered'} ({why})",
                      markup=False)
    selected = [f for f in FEATURES if not options.features or f.name in options.features]
    plans = [plan_feature(feature, target, support, seed) for feature in selected]
    rows = [Row(p.feature.name, p.feature.checks,
                "pending" if p.status == "run" else p.status, p.reason) for p in plans]
    with CheckWorker(options.spark) as checks:
        for plan, row in zip(plans, rows, strict=True):
            if plan.status != "run":
                continue
            row.status = "running"
            console.print(_table(rows))
            try:
                _run_feature(plan, row, target, directory, options, seed, console, checks)
                if plan.feature.shutdown_bound:
                    start_brokers_again(target, console)
            except RunInterrupted:
                # What finished is kept and tabled; the interrupted run keeps its history.
                row.status, row.reason = "error", "interrupted"
                _write_outputs(directory, options, spec.name, seed, rows, INTERRUPTED)
                raise
    code = exit_code(rows)
    _write_outputs(directory, options, spec.name, seed, rows, code)
    console.print(_table(rows))
    return ConformOutcome(directory, rows, code)


def _directory(runs_dir: Path, name: str, seed: int) -> Path:
    directory = runs_dir / "conform" / name / f"{time.strftime('%Y%m%d-%H%M%S')}-{seed}"
    directory.mkdir(parents=True, exist_ok=False)
    (directory / "scenarios").mkdir()
    return directory


def _run_feature(plan: PlannedFeature, row: Row, target: Target, directory: Path,
                 options: ConformOptions, seed: int, console: Console,
                 checks: CheckWorker) -> None:
    """One feature's scenario, fitted to the target, as an ordinary run."""
    assert plan.scenario is not None
    scenario_file = directory / "scenarios" / f"{plan.feature.name}.toml"
    scenario_file.write_text(scenario_toml(plan.scenario))
    command = reproducing_command(options, seed, (plan.feature.name,))
    try:
        outcome = run_scenario(RunOptions(scenario_file, seed, None, directory,
                                          target=target, command=command,
                                          spark=options.spark), console, checks)
    except StarquakeError as exc:
        if exc.exit_code != ENVIRONMENT:
            raise
        row.status, row.reason = "error", str(exc)
        return
    results = outcome.results
    row.run = os.path.relpath(outcome.run_dir, directory)
    if outcome.report is not None:
        row.report = os.path.relpath(outcome.report, directory)
    row.anomalies = {name: int(c["count"]) for name, c in results.get("checkers", {}).items()
                     if c.get("count")}
    verdict = results.get("valid")
    row.status = "pass" if verdict is True else "fail" if verdict is False else "unknown"
    if row.status == "unknown":
        row.reason = "undecided: " + ", ".join(
            name for name, c in results.get("checkers", {}).items()
            if c.get("valid") == "unknown")


def exit_code(rows: list[Row]) -> int:
    """0 when every feature that ran passed; 1 when one failed; 2 when a verdict is
    unknown; 4 when a run could not finish (the target went away)."""
    statuses = {row.status for row in rows}
    if "fail" in statuses:
        return INVALID
    if "unknown" in statuses:
        return UNKNOWN
    if "error" in statuses:
        return ENVIRONMENT
    return VALID


def _table(rows: list[Row]) -> Table:
    table = Table(title="conformance", show_header=True, header_style="bold")
    for column in ("feature", "status", "anomalies or reason"):
        table.add_column(column, overflow="fold")
    for row in rows:
        detail = (", ".join(f"{n}={c}" for n, c in row.anomalies.items())
                  if row.anomalies else row.reason)
        table.add_row(row.feature, Text(row.status, style=STATUS_STYLE[row.status]),
                      Text(detail))
    return table


def _write_outputs(directory: Path, options: ConformOptions, name: str, seed: int,
                   rows: list[Row], code: int) -> None:
    from reports.conformance import write_conformance

    write_conformance(directory, {
        "target": {"name": name, "file": str(options.target_file)},
        "seed": seed,
        "command": reproducing_command(options, seed, options.features),
        "features": [row.document() for row in rows],
        "exit_code": code,
        "starquake_version": starquake_version(),
    })


def reproducing_command(options: ConformOptions, seed: int, features: tuple[str, ...]) -> str:
    """The command that checks `features` (empty: all) again with this seed, in the same
    place: what `command.txt` of each feature's run and `conformance.json` hold."""
    chosen = ["--features", ",".join(features)] if features else []
    return shlex.join(["starquake", "conform", "--target", str(options.target_file), *chosen,
                       "--seed", str(seed), "--runs-dir", str(options.runs_dir)])
