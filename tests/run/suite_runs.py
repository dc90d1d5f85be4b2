"""One suite invocation that several tests read: each scenario runs and is judged once, and
every test asserts what it is about on that run's directory. A run costs a cluster, a load
and a check (about 12 s, most of it Spark starting), so tests that share runs are what
keeps CI within its budget. A suite runs as `starquake suite` runs it, or as a user's CI
does through the pytest plugin (docs/ci.md)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STARQUAKE = [sys.executable, "-m", "starquake"]
CLEAN_UP_S = 120
"""How long a suite interrupted at its timeout has to stop its cluster before it is
killed."""


def _run_interruptibly(command: list[str], timeout_s: float,
                       cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    """`command`'s outcome; past `timeout_s` it gets SIGINT, as a user's Ctrl-C, and
    only then SIGKILL. `subprocess.run`'s timeout kills at once, which would leave a local
    cluster's processes and a docker cluster's containers running after the test."""
    with subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as process:
        try:
            stdout, stderr = process.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.send_signal(signal.SIGINT)
            try:
                process.communicate(timeout=CLEAN_UP_S)
            finally:
                process.kill()
            raise
        return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


class SuiteRuns:
    """`starquake suite PATHS --seed 1 --runs-dir TOP`: its output, and each scenario's run
    by name."""

    def __init__(self, top: Path, *paths: str, timeout_s: float) -> None:
        self.top = top
        self.done = _run_interruptibly(
            [*STARQUAKE, "suite", *paths, "--seed", "1", "--runs-dir", str(top)], timeout_s)
        cases = (self.junit().iter("testcase") if (top / "junit.xml").is_file() else ())
        self.passed = {str(case.get("classname")).removeprefix("starquake."):
                       case.find("failure") is None for case in cases}
        """Scenario name -> whether its run ended as the scenario expects, as the JUnit file
        says (a run that could not finish has no case, or an error in the plugin's)."""

    def outcome(self) -> str:
        """The suite's output and the harness's trouble in every scenario that did not pass:
        the message of an assertion on the whole suite."""
        failed = sorted(name for name, passed in self.passed.items() if not passed)
        return (f"{self.done.stdout[-6000:]}{self.done.stderr}"
                + "".join(f"\n{name}:{self._harness_trouble(name)}" for name in failed))

    def run(self, name: str) -> Path:
        """The suite's run directory of scenario `name` (the first of its runs, should a
        test add a replay beside it), which must have met its expectation."""
        assert self.passed.get(name), (f"{name}: not passed in the suite\n"
                                       f"{self.done.stdout[-6000:]}{self.done.stderr}"
                                       f"{self._harness_trouble(name)}")
        return min((self.top / name).iterdir())

    def _harness_trouble(self, name: str) -> str:
        """The harness's `info` events of `name`'s runs (a drain that timed out names the
        backlogs it left): what CI's log must show of a run that cannot be looked at
        afterwards."""
        lines = []
        for history in sorted((self.top / name).glob("*/history.jsonl")):
            with history.open(encoding="utf-8") as events:
                for line in events:
                    event = json.loads(line)
                    if (event.get("process"), event.get("type")) == ("harness", "info"):
                        lines.append(f"{history.parent.name}: {line.strip()}")
        return "\n".join(["", *lines])

    def junit(self) -> ET.Element:
        return ET.parse(self.top / "junit.xml").getroot()


class PluginSuiteRuns(SuiteRuns):
    """`pytest --starquake NAME --starquake-seed 1` through the installed plugin, as the
    recipes of examples/ci/ run a suite: from a directory outside the checkout (so no
    project settings or conftest of ours take part), pytest's JUnit file beside the runs,
    then `starquake suite-index` for the index and starquake's own JUnit file. pytest runs
    with `-s`, so the runs' output (the containers each used) is in `done.stdout`."""

    def __init__(self, top: Path, name: str, timeout_s: float) -> None:
        top.mkdir(parents=True)
        self.top = top
        self.done = _run_interruptibly(
            [sys.executable, "-m", "pytest", "-s", "-p", "no:cacheprovider",
             "--starquake", name, "--starquake-seed", "1", "--starquake-runs-dir", str(top),
             "--junitxml", str(self.pytest_junit_file)], timeout_s, cwd=top.parent)
        self.indexed = subprocess.run([*STARQUAKE, "suite-index", str(top)], cwd=top.parent,
                                      capture_output=True, text=True, timeout=120, check=False)
        self.passed = {}
        if self.pytest_junit_file.is_file():
            for case in ET.parse(self.pytest_junit_file).getroot().iter("testcase"):
                # `smoke/topic-kill[seed=1]` is written `smoke.topic-kill[seed=1]`.
                scenario = str(case.get("name")).partition("[")[0].rsplit(".", 1)[-1]
                self.passed[scenario] = (case.find("failure") is None
                                         and case.find("error") is None)

    @property
    def pytest_junit_file(self) -> Path:
        return self.top / "pytest-junit.xml"
