"""One `starquake suite` invocation that several tests read: each scenario runs and is
judged once, and every test asserts what it is about on that run's directory. A run costs
a cluster, a load and a `starquake check` process (about 12 s, most of it Spark starting),
so tests that share runs are what keeps CI within its budget."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STARQUAKE = [sys.executable, "-m", "starquake"]


class SuiteRuns:
    """`starquake suite PATHS --seed 1 --runs-dir TOP`: its output, and each scenario's run
    by name."""

    def __init__(self, top: Path, *paths: str, timeout_s: float) -> None:
        self.top = top
        self.done = subprocess.run(
            [*STARQUAKE, "suite", *paths, "--seed", "1", "--runs-dir", str(top)],
            cwd=REPO, capture_output=True, text=True, timeout=timeout_s, check=False)
        cases = (self.junit().iter("testcase") if (top / "junit.xml").is_file() else ())
        self.passed = {str(case.get("classname")).removeprefix("starquake."):
                       case.find("failure") is None for case in cases}
        """Scenario name -> whether its run ended as the scenario expects, as the JUnit file
        says (a run that could not finish has no case)."""

    def run(self, name: str) -> Path:
        """The suite's run directory of scenario `name` (the first of its runs, should a
        test add a replay beside it), which must have met its expectation."""
        assert self.passed.get(name), (f"{name}: not passed in the suite\n"
                                       f"{self.done.stdout[-6000:]}{self.done.stderr}")
        return min((self.top / name).iterdir())

    def junit(self) -> ET.Element:
        return ET.parse(self.top / "junit.xml").getroot()
