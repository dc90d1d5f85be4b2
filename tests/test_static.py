"""Type and lint checks, so that CI fails on either (docs/development.md#static-checks).

Both tools run as `pyproject.toml` configures them, from the repository root, with the
executables of the virtual environment running the tests: what `mypy` and `ruff check`
print there is what a developer sees."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def run_tool(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    executable = BIN / name
    if not executable.is_file():
        pytest.fail(f"{executable} is missing: install the dev extras "
                    f"(pip install -e '.[dev]', as scripts/setup.sh does)")
    return subprocess.run([str(executable), *args], cwd=REPO, capture_output=True, text=True,
                          timeout=600, check=False)


def assert_clean(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, (
        f"{' '.join(done.args)} exited {done.returncode}:\n{done.stdout}{done.stderr}")


def test_mypy() -> None:
    """The packages listed in [tool.mypy] `files`, all strict."""
    assert_clean(run_tool("mypy"))


def test_ruff() -> None:
    """Every Python file in the repository, generated protobuf modules aside."""
    assert_clean(run_tool("ruff", "check", "--no-fix", "--output-format=concise"))
