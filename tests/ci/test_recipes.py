"""What the CI recipes of examples/ci/ run, run here: each recipe's shell steps in order, in
a directory of its own outside the checkout, with a fresh virtual environment that the
recipe's own install step fills from a copy of this checkout (`STARQUAKE_SPEC`). The
services of a hosted runner are not here; the steps that need them are listed below,
each skipped with its reason, and every other step runs (a new step runs unless it is
added to that list)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.ci.recipe_steps import Step, github_steps, gitlab_steps
from tests.packaging.test_wheel import NOT_SHIPPED

pytestmark = pytest.mark.slow  # a fresh environment: pip installs every dependency

REPO = Path(__file__).resolve().parents[2]
RECIPES = REPO / "examples" / "ci"
STEPS = [*github_steps(RECIPES / "github-actions.yml"), *gitlab_steps(RECIPES / "gitlab-ci.yml")]
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]

SKIPPED_BY_DESIGN = (
    (r"apt-get", "installs Debian packages on the runner as root; scripts/setup.sh installed "
                 "the same ones on this machine"),
    (r"systemctl|dockerd", "starts the runner's own Docker engine; this machine's engine is "
                           "shared with other runs and was started by scripts/setup.sh"),
    (r"--starquake smoke .*--junitxml", "the whole smoke suite, a cluster for each of six "
                                        "scenarios: tests/pytest_plugin/test_runs.py runs the "
                                        "plugin end to end, tests/run/test_smoke_suite.py the "
                                        "suite through it"),
    (r"starquake suite-index runs", "indexes the smoke suite's runs, which are not made "
                                    "here: tests/run/test_smoke_suite.py runs the recipe's "
                                    "suite command and this index"),
    (r"starquake (cluster up|conform|cluster down)", "a cluster of the job's own and every "
                                                     "conformance feature against it: "
                                                     "tests/docker/test_conform_containers.py"),
)


@dataclass(frozen=True)
class Job:
    """A recipe's working directory and the environment its steps see."""

    work: Path
    env: dict[str, str]


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the checkout, as pip gets it in CI (builds leave nothing in ours)."""
    copy = tmp_path_factory.mktemp("ci-source") / "starquake"
    shutil.copytree(REPO, copy, ignore=shutil.ignore_patterns(*NOT_SHIPPED))
    return copy


@pytest.fixture(scope="module")
def jobs(tmp_path_factory: pytest.TempPathFactory, source: Path) -> dict[str, Job]:
    """Per recipe: `python` is this interpreter (the runner's Python 3.11), nothing of this
    checkout's environment leaks in."""
    made = {}
    for recipe in sorted({step.recipe for step in STEPS}):
        top = tmp_path_factory.mktemp("ci-job")
        shims = top / "bin"
        shims.mkdir()
        (shims / "python").symlink_to(sys.executable)
        work = top / "work"
        work.mkdir()
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("PYTHON") and k != "VIRTUAL_ENV"}
        env.update(PATH=f"{shims}{os.pathsep}{env['PATH']}", STARQUAKE_SPEC=str(source),
                   TARGET_FILE=str(REPO / "examples/targets/reference-containers.toml"))
        made[recipe] = Job(work, env)
    return made


def _skip_reason(step: Step) -> str | None:
    return next((reason for pattern, reason in SKIPPED_BY_DESIGN
                 if re.search(pattern, step.command)), None)


@pytest.mark.parametrize("step", STEPS, ids=[f"{s.recipe}:{s.job}:{s.command.splitlines()[0]}"
                                             for s in STEPS])
def test_step(step: Step, jobs: dict[str, Job]) -> None:
    reason = _skip_reason(step)
    if reason is not None:
        pytest.skip(f"by design: {reason}")
    job = jobs[step.recipe]
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", step.command], cwd=job.work,
                          env=job.env, capture_output=True, text=True, timeout=900,
                          check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{step.command}\nexit {done.returncode}\n{output[-4000:]}"
    if "starquake --version" in step.command:
        assert f"starquake {VERSION}" in done.stdout.splitlines(), output
    if "--collect-only" in step.command:
        assert "smoke/topic-kill[seed=1]" in done.stdout.splitlines(), output
        assert "6 tests collected" in done.stdout, output


def test_every_recipe_has_runnable_and_skipped_steps() -> None:
    """The extraction found the recipes' steps: an install, a version, a collection, and
    the steps this machine cannot take."""
    for recipe in ("github-actions.yml", "gitlab-ci.yml"):
        commands = [s.command for s in STEPS if s.recipe == recipe]
        assert any('pip install "$STARQUAKE_SPEC"' in c for c in commands), recipe
        assert any("starquake --version" in c for c in commands), recipe
        assert any("--collect-only" in c for c in commands), recipe
        assert any("starquake conform --target" in c for c in commands), recipe
        assert any("--junitxml" in c for c in commands), recipe
