"""A run's directory: `runs/<scenario>/<timestamp>-<seed>/`, what goes in it before the
cluster starts, and the `runs/latest` link to the newest run.

Layout (docs/running.md): `scenario.toml` (the scenario as run, defaults filled in),
`command.txt` (the command that reproduces it), `history.jsonl` and `history.parquet`,
`results.json`, `check.log`, `report.html`, `logs/<node>.log` and `logs/client.log`.
"""

from __future__ import annotations

import os
import shlex
import time
from pathlib import Path

from scenarios.format import Scenario, scenario_toml

LATEST = "latest"


def create_run_dir(runs_dir: Path, scenario: Scenario, seed: int) -> Path:
    """A new, empty directory for this run; never one an earlier run used (a second run
    of the same scenario and seed within one second gets a suffix)."""
    parent = runs_dir / scenario.name
    parent.mkdir(parents=True, exist_ok=True)
    stem = f"{time.strftime('%Y%m%d-%H%M%S')}-{seed}"
    for attempt in range(100):
        path = parent / (stem if attempt == 0 else f"{stem}.{attempt}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"{parent}: 100 runs named {stem}* already exist")


def reproducing_command(run_dir: Path) -> str:
    """The command line that runs this run again: its scenario copy, seed, mutants and the
    nodes its faults hit, into the same runs directory (`starquake/run/reproduce.py`)."""
    return shlex.join(["starquake", "reproduce", str(run_dir)])


def write_inputs(run_dir: Path, scenario: Scenario, command: str) -> None:
    (run_dir / "scenario.toml").write_text(scenario_toml(scenario))
    (run_dir / "command.txt").write_text(command + "\n")


def update_latest(runs_dir: Path, run_dir: Path) -> Path:
    """Point `runs_dir/latest` at `run_dir` (relative, so the tree can move), replacing
    the old link in one rename."""
    link = runs_dir / LATEST
    temporary = runs_dir / f".{LATEST}.{os.getpid()}"
    temporary.unlink(missing_ok=True)
    temporary.symlink_to(os.path.relpath(run_dir, runs_dir))
    os.replace(temporary, link)
    return link
