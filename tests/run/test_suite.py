"""`starquake suite`: every scenario validated before anything starts, each run judged
against the verdict its scenario expects, and an index and JUnit file CI can read."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.run.test_run_local import _events, _never_received

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
STARQUAKE = [sys.executable, "-m", "starquake"]


def _suite(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*STARQUAKE, "suite", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=400, check=False)


def test_a_bad_scenario_stops_the_suite_before_any_run(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\n[topology]\nbrokers = 0\n')
    done = _suite(str(REPO / "scenarios/smoke/topic-kill.toml"), str(bad),
                  "--runs-dir", str(tmp_path / "runs"))
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"{bad}: topology.brokers" in done.stderr
    assert not (tmp_path / "runs").exists()


def test_a_directory_without_scenarios_is_bad_input(tmp_path: Path) -> None:
    done = _suite(str(tmp_path))
    assert done.returncode == 3
    assert f"{tmp_path}: no scenario files" in done.stderr


@pytest.mark.cluster
@pytest.mark.spark
@pytest.mark.slow
def test_a_caught_mutant_passes_the_suite_and_junit_says_so(tmp_path: Path) -> None:
    """A short mutants suite: a storage mutant (the bookie drops acknowledged writes before
    they are durable) and a client-contract one (delayed delivery ignored). Each scenario
    expects `invalid` with its named anomaly, so catching both is a pass: exit 0, and a
    JUnit file with two testcases and no failure, each naming its anomalies."""
    runs = tmp_path / "runs"
    mutants = REPO / "scenarios/mutants"
    done = _suite(str(mutants / "topic-ack-before-durable.toml"),
                  str(mutants / "contract-deliver-at-ignored.toml"), "--seed", "1",
                  "--backend", "local", "--runs-dir", str(runs))
    assert done.returncode == 0, done.stdout + done.stderr
    (run_dir,) = (runs / "topic-ack-before-durable").iterdir()
    results = json.loads((run_dir / "results.json").read_text())
    lost = results["checkers"]["lost"]
    # The late subscription, read from storage after the kill, misses what was acknowledged
    # before the writes were durable; `lost` counts it (and whatever `live` missed too).
    events = _events(run_dir)
    missed = {sub: _never_received(events, sub) for sub in ("live", "late")}
    assert results["valid"] is False and missed["late"]
    assert lost["count"] == sum(len(values) for values in missed.values())

    junit = ET.parse(runs / "junit.xml").getroot()
    assert (junit.get("tests"), junit.get("failures")) == ("2", "0")
    out = {case.get("classname"): case.findtext("system-out") or ""
           for case in junit.iter("testcase")}
    assert set(out) == {"starquake.topic-ack-before-durable",
                        "starquake.contract-deliver-at-ignored"}
    assert "lost=" in out["starquake.topic-ack-before-durable"]
    assert "contract=" in out["starquake.contract-deliver-at-ignored"]
    index = (runs / "index.html").read_text()
    assert "topic-ack-before-durable" in index and "contract-deliver-at-ignored" in index
