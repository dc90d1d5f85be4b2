"""The run directory: named by scenario, time and seed, never reused, holding the resolved
scenario and the reproducing command; `runs/latest` follows the newest run."""

from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path

from scenarios.format import load_scenario
from starquake.run.pipeline import RunOptions, resolve
from starquake.run.run_dir import create_run_dir, reproducing_command, update_latest, write_inputs
from tests.run.conftest import WriteScenario


def test_run_dirs_are_named_by_scenario_time_and_seed(
        write_scenario: WriteScenario, tmp_path: Path) -> None:
    scenario = write_scenario('name = "mine"\n')
    first = create_run_dir(tmp_path / "runs", scenario, 17)
    second = create_run_dir(tmp_path / "runs", scenario, 17)
    assert first.parent == tmp_path / "runs" / "mine"
    assert re.fullmatch(r"\d{8}-\d{6}-17", first.name)
    assert second != first and second.is_dir()


def test_inputs_reproduce_the_run(write_scenario: WriteScenario, tmp_path: Path) -> None:
    scenario = dataclasses.replace(write_scenario('duration_s = 9\n'), seed=5)
    command = reproducing_command(Path("runs/my run/20261125-120000-5"))
    write_inputs(tmp_path, scenario, command)
    assert shlex.split((tmp_path / "command.txt").read_text()) == [
        "starquake", "reproduce", "runs/my run/20261125-120000-5"]
    resolved = load_scenario(tmp_path / "scenario.toml")
    assert (resolved.seed, resolved.duration_s, resolved.name) == (5, 9.0, "s")


def test_latest_points_at_the_newest_run(write_scenario: WriteScenario, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    scenario = write_scenario("")
    first, second = create_run_dir(runs, scenario, 1), create_run_dir(runs, scenario, 2)
    update_latest(runs, first)
    link = update_latest(runs, second)
    assert link.is_symlink() and link.resolve() == second.resolve()
    assert not Path(str(link.readlink())).is_absolute()


def test_a_seed_is_chosen_when_none_is_given_and_the_backend_applied(
        write_scenario: WriteScenario) -> None:
    scenario = write_scenario('[workload]\nkind = "topic"\n')
    chosen, _ = resolve(RunOptions(scenario.path, backend="local"))
    assert isinstance(chosen.seed, int) and chosen.topology.backend == "local"
    fixed, schedule = resolve(RunOptions(scenario.path, seed=99))
    assert fixed.seed == 99 and fixed.topology.backend == "docker"
    assert schedule.heal_at_s == scenario.duration_s
