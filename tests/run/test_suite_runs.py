"""The suite fixture's runner: a suite past its time is interrupted as by Ctrl-C, so it
can stop what it started, and only then killed; a failed suite's message shows what the
harness recorded of its trouble in each scenario that failed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.run.suite_runs import SuiteRuns, _run_interruptibly

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


def test_a_suite_that_failed_shows_the_harness_trouble_of_each_failed_scenario(
        tmp_path: Path) -> None:
    runs = SuiteRuns.__new__(SuiteRuns)
    runs.top = tmp_path
    runs.done = subprocess.CompletedProcess([], 1, "suite: 1 of 2 not as expected\n", "")
    runs.passed = {"quiet": True, "stuck": False}
    for name, event in (("quiet", {"process": "harness", "type": "info", "f": "drain",
                                   "error": "never-shown"}),
                        ("stuck", {"process": "harness", "type": "info", "f": "drain",
                                   "error": "timeout", "detail": "{\"3/stream\": 12}"})):
        run = tmp_path / name / "20261128-000000-1"
        run.mkdir(parents=True)
        (run / "history.jsonl").write_text(json.dumps(event) + "\n")
    outcome = runs.outcome()
    assert outcome.startswith("suite: 1 of 2 not as expected")
    assert "stuck:" in outcome and "3/stream" in outcome and "never-shown" not in outcome
