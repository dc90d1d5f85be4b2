"""The pytest plugin runs scenarios as `starquake run` does: on correct code the item of a
scenario that expects `valid` passes; with a mutant switched on the same probes fail it,
and the failure names the verdict, the anomalies with examples, the seed, the command that
reproduces the run and the report; a run whose drain never completes is `unknown`, an
error. The three runs in one pytest session (one check worker), on local processes.
Every file of theirs names the version of starquake: results.json, the report, pytest's
JUnit file, and a suite index and JUnit file made from them."""

from __future__ import annotations

import json
import shlex
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from history.version import starquake_version
from reports.suite import write_suite_index

pytest_plugins = ["pytester"]

SCENARIOS = Path(__file__).resolve().parent / "scenarios"
pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]


def test_a_valid_run_passes_and_a_mutant_fails_with_what_to_do_next(
        pytester: pytest.Pytester) -> None:
    # Copies, so that the session's root is pytester's directory: no project settings.
    for scenario in SCENARIOS.glob("*.toml"):
        shutil.copy(scenario, pytester.path)
    result = pytester.runpytest_subprocess(
        "--starquake", "contract-delayed.toml",
        "--starquake", "contract-delayed-under-mutant.toml",
        "--starquake", "topic-undrained.toml",
        "--starquake-seed", "1", "--starquake-runs-dir", "runs", "--junitxml", "junit.xml",
        "-p", "no:cacheprovider", timeout=900)
    result.assert_outcomes(passed=1, failed=1, errors=1)
    result.stdout.fnmatch_lines([
        "*ERROR at setup of starquake scenario topic-undrained[[]seed=1]*",
        "topic-undrained[[]seed=1]: expected valid, got unknown (no anomalies)",
        "  undecided: lost (the history has no completed drain)*"])
    text = "\n".join(result.outlines)
    result.stdout.fnmatch_lines([
        "*contract-delayed-under-mutant[[]seed=1]: expected valid, got invalid (contract=*)",
        "  contract: *", "    e.g. {*deliver-*", "  seed: 1",
        "  reproduce: starquake reproduce runs/contract-delayed-under-mutant/*-1",
        "  run directory: runs/contract-delayed-under-mutant/*",
        "  report: runs/contract-delayed-under-mutant/*/report.html"])
    command = next(line for line in result.outlines
                   if line.startswith("  reproduce: starquake reproduce runs/contract-delayed-"))
    run_dir = pytester.path / shlex.split(command.removeprefix("  reproduce: "))[-1]
    assert (run_dir / "report.html").is_file(), text
    results = json.loads((run_dir / "results.json").read_text())
    assert results["starquake_version"] == starquake_version()
    assert results["checkers"]["contract"]["count"] > 0
    written_by = f"Written by starquake {starquake_version()}."
    assert written_by in (run_dir / "report.html").read_text()
    runs = [path.parent for path in (pytester.path / "runs").glob("*/*/results.json")
            if not path.parent.parent.is_symlink()]
    index, suite_junit = write_suite_index(runs, pytester.path / "index")
    assert written_by in index.read_text()
    assert [(p.get("name"), p.get("value")) for p in ET.parse(suite_junit).iter("property")
            ] == [("starquake_version", starquake_version())]

    cases = {case.get("name"): case
             for case in ET.parse(pytester.path / "junit.xml").getroot().iter("testcase")}
    assert len(cases) == 3
    for name, case in cases.items():
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert properties["starquake_version"] == starquake_version()
        assert properties["seed"] == "1"
        failure = case.find("failure")
        if "undrained" in str(name):
            assert properties["verdict"] == "unknown" and case.find("error") is not None
        elif "under-mutant" in str(name):
            assert properties["verdict"] == "invalid"
            assert failure is not None and "reproduce: starquake reproduce" in (
                failure.get("message") or "")
        else:
            assert properties["verdict"] == "valid" and failure is None
