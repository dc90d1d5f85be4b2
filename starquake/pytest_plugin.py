"""starquake's pytest plugin: scenarios as test items, for a CI that speaks pytest
(docs/ci.md). Registered in the `pytest11` entry-point group as `starquake`, so
`-p no:starquake` turns it off.

It collects scenarios only when asked, so a project's own `pytest` run is unchanged:

- `--starquake NAME` (repeatable): packaged suites and scenarios as `starquake scenario
  ls` names them (`smoke`, `smoke/topic-kill`), or scenario files and directories. With no
  test paths on the command line, only these are collected (not the project's
  `testpaths`). Their ids are their names: `smoke/topic-kill[seed=1]`.
- Paths on the command line: a `.toml` file named there is a scenario (one that is not is a
  collection error), and so is each `*.toml` directly inside a directory named there that
  reads as a scenario (a top-level `name` and a `[workload]` table): `pytest
  scenarios/smoke/`. Directories pytest walks into on its own, and `testpaths`, collect
  no scenario.

This module holds the hooks and what a session's items share, and imports nothing heavy:
pytest loads it in every session of an environment where starquake is installed. The
items, and the run behind each, are in `starquake.pytest_scenario`.
"""

from __future__ import annotations

import os
import secrets
import shlex
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from checkers.spark_settings import OPTIONS as SPARK_OPTIONS
from checkers.spark_settings import SparkSettings, memory_size_problem, settings_from
from harness.backends import BACKENDS

if TYPE_CHECKING:
    from harness.target import Target
    from starquake.pytest_scenario import ScenarioFile
    from starquake.run.check_worker import CheckWorker
    from starquake.run.pipeline import RunOptions

SUFFIX = ".toml"


@dataclass
class PluginRuns:
    """What the items of one session share: the options, one check worker (its Spark
    session starts once, as for `starquake suite`), and the system of `--starquake-target`,
    read and reached once, at the first run. What it imports is imported when it runs."""

    seed: int | None
    backend: str | None
    runs_dir: Path
    spark: SparkSettings
    target_file: Path | None = None
    _target: Target | None = field(default=None, init=False)
    _checks: CheckWorker | None = field(default=None, init=False)

    def checks(self) -> CheckWorker:
        if self._checks is None:
            from starquake.run.check_worker import CheckWorker

            self._checks = CheckWorker(self.spark)
        return self._checks

    def target(self) -> Target | None:
        """None: each run deploys its scenario's topology. Else the system the target file
        describes, which no run starts or stops (as for `starquake conform`)."""
        if self.target_file is None or self._target is not None:
            return self._target
        from harness.targets.external.file import load_target_file
        from harness.targets.external.reachability import check_reachable
        from harness.targets.external.target import ExternalTarget

        target = ExternalTarget(load_target_file(self.target_file))
        check_reachable(target)
        self._target = target
        return target

    def options(self, scenario: Path, seed: int | None) -> RunOptions:
        from starquake.run.pipeline import SEED_LIMIT, RunOptions

        target = self.target()
        if target is None:
            return RunOptions(scenario, seed, self.backend, self.runs_dir, spark=self.spark)
        # `starquake reproduce` deploys the scenario's topology; a run aimed at the target is
        # repeated by the same pytest options and its seed, drawn here to be named.
        seed = seed if seed is not None else secrets.randbelow(SEED_LIMIT)
        command = shlex.join(["pytest", "--starquake", str(scenario), "--starquake-target",
                              str(self.target_file), "--starquake-seed", str(seed)])
        return RunOptions(scenario, seed, None, self.runs_dir, target=target, command=command,
                          spark=self.spark)

    def close(self) -> None:
        if self._checks is not None:
            self._checks.close()
            self._checks = None


RUNS = pytest.StashKey["PluginRuns"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("starquake", "starquake scenarios as test items (docs/ci.md)")
    group.addoption("--starquake", action="append", default=[], metavar="NAME",
                    help="Collect a packaged suite or scenario (`starquake scenario ls`: "
                         "smoke, smoke/topic-kill), a scenario file or a directory of them; "
                         "repeatable.")
    group.addoption("--starquake-seed", type=int, default=None, metavar="N",
                    help="One seed for every scenario [each scenario's, else random; "
                         "recorded].")
    group.addoption("--starquake-backend", choices=tuple(BACKENDS), default=None,
                    help="Overrides every scenario's topology.backend.")
    group.addoption("--starquake-target", default=None, metavar="FILE",
                    help="Aim every scenario at the system this target file describes "
                         "(docs/testing-your-implementation.md) instead of deploying it.")
    group.addoption("--starquake-runs-dir", default="runs", metavar="DIR",
                    help="Runs go to DIR/<scenario>/<timestamp>-<seed>/ [runs].")
    for flag, env, text in SPARK_OPTIONS:
        group.addoption(f"--starquake-{flag[2:]}", default=None,
                        metavar=flag.rsplit("-", 1)[1].upper(),
                        help=f"{text} Environment: {env}.")


def pytest_configure(config: pytest.Config) -> None:
    """With `--starquake` or scenario paths given: check the options and make the
    session's shared state. Bad options are usage errors, before anything runs."""
    names: list[str] = config.getoption("starquake")
    if not names and not _named_paths(config):
        return
    seed = config.getoption("starquake_seed")
    if seed is not None and seed < 0:
        raise pytest.UsageError(f"--starquake-seed {seed}: expected a seed of 0 or more")
    values = [config.getoption(f"starquake_{flag[2:].replace('-', '_')}") or os.environ.get(env)
              for flag, env, _text in SPARK_OPTIONS]
    spark = settings_from(values)
    problem = memory_size_problem(values[4])
    if problem is not None:
        raise pytest.UsageError(f"--starquake-spark-driver-memory {problem}")
    if spark.shared_dir is not None and not spark.shared_dir.is_dir():
        raise pytest.UsageError(f"--starquake-spark-shared-dir {spark.shared_dir}: "
                                "no such directory")
    target = config.getoption("starquake_target")
    if target is not None and not Path(target).is_file():
        raise pytest.UsageError(f"--starquake-target {target}: no such file")
    config.stash[RUNS] = PluginRuns(seed, config.getoption("starquake_backend"),
                                    Path(config.getoption("starquake_runs_dir")), spark,
                                    Path(target) if target is not None else None)
    if names and config.args_source is not pytest.Config.ArgsSource.ARGS:
        config.args = []  # the scenarios asked for, not the project's testpaths


def pytest_unconfigure(config: pytest.Config) -> None:
    if _configured(config):
        config.stash[RUNS].close()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> ScenarioFile | None:
    if file_path.suffix != SUFFIX or not _configured(parent.config):
        return None
    named = _named_paths(parent.config)
    if file_path in named or (file_path.parent in named and _reads_as_scenario(file_path)):
        from starquake.pytest_scenario import ScenarioFile

        file: ScenarioFile = ScenarioFile.from_parent(parent, path=file_path)
        return file
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    """The `--starquake` scenarios, collected (and counted, and their errors reported) as
    any collector's, before `-k`, `-m` and `--lf` choose among the items: their hooks run
    after this one."""
    names: list[str] = config.getoption("starquake")
    if not names:
        return
    from starquake.pytest_scenario import ScenarioNames

    seen = {item.nodeid for item in items}
    for node in session.genitems(ScenarioNames.from_parent(session, name="--starquake",
                                                           nodeid="--starquake", names=names)):
        if node.nodeid not in seen:
            seen.add(node.nodeid)
            items.append(node)


def _configured(config: pytest.Config) -> bool:
    return RUNS in config.stash


def _named_paths(config: pytest.Config) -> set[Path]:
    """The files and directories given on the command line (not `testpaths`), absolute."""
    if config.args_source is not pytest.Config.ArgsSource.ARGS:
        return set()
    where = config.invocation_params.dir
    return {(where / arg.split("::", 1)[0]).resolve() for arg in config.args}


def _reads_as_scenario(path: Path) -> bool:
    """A TOML file with a top-level `name` and a `[workload]` table, as every scenario
    has, so that a directory's other TOML files (pyproject.toml, a tool's settings) are
    left alone."""
    try:
        document = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return isinstance(document.get("name"), str) and isinstance(document.get("workload"), dict)
