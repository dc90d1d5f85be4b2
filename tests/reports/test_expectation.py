"""Whether a run met its expectation: the expected verdict, reached through every anomaly
its scenario names (a mutant caught by some other anomaly is not the catch it is about);
and every checker a verdict can name is explained in the report."""

from __future__ import annotations

from pathlib import Path

import pytest

from history.checker_registry import CHECKER_NAMES, definition
from reports.run_dir import RunDirectory

RESULTS = {"valid": False, "checkers": {"lost": {"valid": True, "count": 0},
                                        "contract": {"valid": False, "count": 2}}}


def _run(meta: dict[str, object]) -> RunDirectory:
    return RunDirectory(Path("run"), RESULTS, Path("run/history.jsonl"), meta, {}, None, ())


@pytest.mark.parametrize(("expected_anomalies", "missing"), [
    ([], []), (["contract"], []), (["lost"], ["lost"]), (["contract", "lost"], ["lost"])])
def test_an_invalid_run_meets_its_expectation_only_through_the_named_anomalies(
        expected_anomalies: list[str], missing: list[str]) -> None:
    run = _run({"expected": "invalid", "expected_anomalies": expected_anomalies})
    assert run.missing_anomalies == missing
    assert run.met_expectation is (not missing)


def test_the_wrong_verdict_never_meets_it() -> None:
    assert not _run({"expected": "valid"}).met_expectation


def test_every_checker_has_a_definition_in_the_report() -> None:
    assert all(definition(name) for name in CHECKER_NAMES)
