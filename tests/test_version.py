"""The version of starquake that wrote a file is in it: `starquake --version` prints the
package metadata's, and the JUnit files and HTML pages name the same (results.json's is
shown in tests/pytest_plugin/test_runs.py)."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from importlib.metadata import version
from pathlib import Path

from history.version import starquake_version
from reports.conformance import write_conformance

DOCUMENT = {
    "target": {"name": "example", "file": "example.toml"}, "seed": 1,
    "command": "starquake conform --target example.toml --seed 1", "exit_code": 0,
    "features": [{"feature": "client-contract", "checks": "the client contract",
                  "status": "pass", "reason": "", "anomalies": {}, "run": "run",
                  "report": None}],
}


def test_version_is_the_package_metadata_s() -> None:
    done = subprocess.run([sys.executable, "-m", "starquake", "--version"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert (done.returncode, done.stdout) == (0, f"starquake {version('starquake')}\n")
    assert starquake_version() == version("starquake")


def test_conformance_junit_and_page_name_the_version(tmp_path: Path) -> None:
    _data, page, junit = write_conformance(tmp_path, DOCUMENT)
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert next(iter(suite)).tag == "properties"  # first, as JUnit readers expect
    assert {p.get("name"): p.get("value") for p in suite.iter("property")} == {
        "starquake_version": starquake_version()}
    assert f"Written by starquake {starquake_version()}." in page.read_text()
