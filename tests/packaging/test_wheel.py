"""The product stands alone: a wheel built from this checkout, installed into a clean
virtual environment outside it, lists and validates its packaged scenarios, checks the
example history it ships, and builds the node image's context from site-packages.

Nothing here may import from the checkout: the commands run from a directory outside it,
with no PYTHONPATH, through the fresh environment's own interpreter and console script.
The dependencies come from the machine's package index (pip's own configuration); set
STARQUAKE_WHEELHOUSE to a directory of wheels to install from it alone (--no-index).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
# Not part of the product: what the copy the wheel is built from leaves out.
NOT_SHIPPED = (".git", ".venv", "build", "dist", "runs", "tests", "*.egg-info", "__pycache__",
               "*.pyc", ".pytest_cache", ".hypothesis", "spark-warehouse", "metastore_db",
               "derby.log")


@dataclass(frozen=True)
class Installed:
    bin: Path
    work: Path
    env: dict[str, str]

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.bin / "starquake"), *args], cwd=self.work,
                              env=self.env, capture_output=True, text=True, timeout=timeout,
                              check=False)

    def python(self, code: str) -> str:
        done = subprocess.run([str(self.bin / "python"), "-c", code], cwd=self.work,
                              env=self.env, capture_output=True, text=True, timeout=120,
                              check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout.strip()


def _step(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, f"{' '.join(args)}\n{done.stdout}{done.stderr}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    top = tmp_path_factory.mktemp("packaging")
    assert REPO not in top.parents, "the test's directory must lie outside the checkout"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("PYTHON") and k != "VIRTUAL_ENV"}

    # Build from a copy, so the build leaves nothing (build/, egg-info) in the checkout.
    source = top / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(*NOT_SHIPPED))
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(top / "dist")]
    if importlib.util.find_spec("setuptools") is not None:
        build.append("--no-build-isolation")
    _step([*build, str(source)], cwd=top, env=env)
    (wheel,) = (top / "dist").glob("starquake-*.whl")

    venv = top / "venv"
    _step([sys.executable, "-m", "venv", str(venv)], cwd=top, env=env)
    assert "include-system-site-packages = false" in (venv / "pyvenv.cfg").read_text()
    install = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    wheelhouse = os.environ.get("STARQUAKE_WHEELHOUSE")
    if wheelhouse:
        install += ["--no-index", "--find-links", wheelhouse]
    _step([*install, str(wheel)], cwd=top, env=env)

    work = top / "work"
    work.mkdir()
    return Installed(bin=venv / "bin", work=work, env=env)


def test_the_package_is_imported_from_the_fresh_environment(installed: Installed) -> None:
    site = installed.python("import scenarios, history, harness; print(scenarios.__file__)")
    assert Path(site).is_relative_to(installed.bin.parent), site
    assert not Path(site).is_relative_to(REPO)


def test_scenario_ls_lists_every_packaged_suite(installed: Installed) -> None:
    done = installed.run("scenario", "ls")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert {"smoke:", "full:", "mutants:", "conformance:"} <= set(lines)
    topic_faults = next(line for line in lines if "smoke/topic-faults " in line)
    assert topic_faults.split()[1:3] == ["topic", "valid"]
    assert any("mutants/scalable-child-cursor-at-latest" in line and " invalid " in line
               for line in lines)


def test_validate_accepts_a_packaged_name(installed: Installed) -> None:
    done = installed.run("scenario", "validate", "smoke/topic-faults")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "smoke/topic-faults: ok (topic-faults, expects valid)"
    unknown = installed.run("scenario", "validate", "smoke/no-such-scenario")
    assert unknown.returncode == 3
    assert "smoke/no-such-scenario: no such scenario file or packaged scenario" in unknown.stderr
    assert "smoke/topic-faults" in unknown.stderr


def test_suite_refuses_an_unknown_name_before_running_anything(installed: Installed) -> None:
    done = installed.run("suite", "no-such-suite", "--runs-dir", str(installed.work / "runs"))
    assert done.returncode == 3
    assert "suites: smoke, full, mutants, conformance" in done.stderr
    assert not (installed.work / "runs").exists()


def test_check_judges_the_packaged_example_history(installed: Installed) -> None:
    example = Path(installed.python(
        "from scenarios.catalogue import example_history; print(example_history())"))
    assert example.is_relative_to(installed.bin.parent) and example.is_file()
    # Checking writes beside the history, so the example is checked in a copy.
    run_dir = installed.work / "example"
    shutil.copytree(example.parent, run_dir)
    done = installed.run("check", "example", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "verdict: valid" in done.stdout
    results = json.loads((run_dir / "results.json").read_text())
    assert results["valid"] is True and results["events"] == 506


def test_the_node_image_context_is_built_from_site_packages(installed: Installed) -> None:
    out = installed.work / "context.tar"
    installed.python("import pathlib; from harness.targets.docker.images import build_context_tar; "
                     f"pathlib.Path({str(out)!r}).write_bytes(build_context_tar())")
    context = installed.work / "context"
    shutil.unpack_archive(out, context)
    assert (context / "Dockerfile").is_file()
    assert (context / "scenarios" / "smoke" / "topic-faults.toml").is_file()
    project = tomllib.loads((context / "pyproject.toml").read_text())
    pinned = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    assert project["project"]["dependencies"] == pinned
