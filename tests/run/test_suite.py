"""`starquake suite`: every scenario validated before anything starts, each run judged
against the verdict its scenario expects, and an index and JUnit file CI can read."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.run.conftest import MUTANTS_SUITE
from tests.run.suite_runs import REPO, STARQUAKE, SuiteRuns
from tests.run.test_run_local import _events, _never_received


def _suite(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*STARQUAKE, "suite", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=400, check=False)


def test_a_bad_scenario_stops_the_suite_before_any_run(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\n[topology]\nbrokers = 0\n')
    done = _suite(str(REPO / "scenarios/smoke/topic-kill.toml"), str(bad),
                  "--runs-dir", str(tmp_path / "runs"))
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"{bad}:3: topology.brokers" in done.stderr
    assert not (tmp_path / "runs").exists()


def test_a_directory_without_scenarios_is_bad_input(tmp_path: Path) -> None:
    done = _suite(str(tmp_path))
    assert done.returncode == 3
    assert f"{tmp_path}: no scenario files" in done.stderr


@pytest.mark.cluster
@pytest.mark.spark
@pytest.mark.slow
def test_the_short_mutants_suite_passes_and_junit_says_so(mutants_suite: SuiteRuns) -> None:
    """CI's short mutants suite (tests/run/conftest.py): each mutant scenario expects
    `invalid` with its named anomaly and the one clean scenario `valid`, so catching every
    mutant is a pass: exit 0, and a JUnit file with a testcase per scenario, no failure,
    each mutant's naming its anomalies. A storage mutant's catch in detail: the bookie
    drops acknowledged writes before they are durable, and `lost` counts exactly what the
    subscriptions never received."""
    assert mutants_suite.done.returncode == 0, mutants_suite.outcome()
    names = [Path(path).stem for path in MUTANTS_SUITE]
    assert mutants_suite.passed == dict.fromkeys(names, True)

    run_dir = mutants_suite.run("topic-ack-before-durable")
    results = json.loads((run_dir / "results.json").read_text())
    lost = results["checkers"]["lost"]
    # The late subscription, read from storage after the kill, misses what was acknowledged
    # before the writes were durable; `lost` counts it (and whatever `live` missed too).
    events = _events(run_dir)
    missed = {sub: _never_received(events, sub) for sub in ("live", "late")}
    assert results["valid"] is False and missed["late"]
    assert lost["count"] == sum(len(values) for values in missed.values())

    junit = mutants_suite.junit()
    assert (junit.get("tests"), junit.get("failures")) == (str(len(names)), "0")
    out = {case.get("classname"): case.findtext("system-out") or ""
           for case in junit.iter("testcase")}
    assert set(out) == {f"starquake.{name}" for name in names}
    assert "lost=" in out["starquake.topic-ack-before-durable"]
    assert "contract=" in out["starquake.contract-deliver-at-ignored"]
    index = (mutants_suite.top / "index.html").read_text()
    assert all(name in index for name in names)
