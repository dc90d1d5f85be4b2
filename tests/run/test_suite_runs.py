"""The suite fixture's runner: a suite past its time is interrupted as by Ctrl-C, so it
can stop what it started, and only then killed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.run.suite_runs import _run_interruptibly

SLEEPER = """
import sys, time
try:
    time.sleep(60)
except KeyboardInterrupt:
    open(sys.argv[1], "w").write("cleaned up")
"""


def test_a_suite_past_its_timeout_gets_an_interrupt_before_the_kill(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    with pytest.raises(subprocess.TimeoutExpired):
        _run_interruptibly([sys.executable, "-c", SLEEPER, str(marker)], timeout_s=5)
    assert marker.read_text() == "cleaned up"


def test_a_suite_within_its_timeout_gives_its_output_and_exit_code() -> None:
    done = _run_interruptibly(
        [sys.executable, "-c", "import sys; print('out'); sys.exit(3)"], timeout_s=30)
    assert (done.returncode, done.stdout) == (3, "out\n")
