"""The registry is the one place a checker is declared: every entry binds to a finder, and
a checker added to it (here a throwaway, registered for one test only) is judged into
`results.json` and explained in the report like the others."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.anomaly import CheckSettings, anomalies
from checkers.check import check_runs, write_results
from checkers.frames import HistoryFrames
from checkers.load import prepare
from checkers.registry import registered
from history import checker_registry
from history.checker_registry import CheckerEntry
from reports.report import write_report
from tests.checkers.builder import History

THROWAWAY = CheckerEntry(
    "throwaway", "A send of the value m2, which only this test forbids.",
    f"{__name__}:sends_of_m2")


def sends_of_m2(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    """The throwaway checker's finder: every send of m2."""
    sends = frames.ops.filter((F.col("f") == "send") & (F.col("value") == "m2"))
    return anomalies(THROWAWAY.name, sends, "inv_index", ["inv_index", "done_index"],
                     value="value")


def test_every_entry_binds_to_a_function_of_the_checkers() -> None:
    for checker in registered():
        references = [checker.entry.finder, checker.entry.judges or "checkers."]
        assert all(r.startswith("checkers.") for r in references), checker.name
        assert callable(checker.finder), checker.name
        assert checker.entry.optional is callable(checker.judges), checker.name


@pytest.mark.spark
def test_a_registered_checker_is_judged_and_defined(spark, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    history = History(tmp_path / "history.jsonl")
    history.subscribe("s", "exclusive")
    sent = {value: history.send(value, position=f"1:{n}")
            for n, value in enumerate(("m1", "m2", "m3"))}
    for n, value in enumerate(sent):
        history.recv(value, position=f"1:{n}")
        history.ack(value)
    history.drain()
    monkeypatch.setattr(checker_registry, "CHECKERS", (*checker_registry.CHECKERS, THROWAWAY))

    (result,) = check_runs(spark, {"run": prepare(history.close())}, CheckSettings())
    write_results(result)
    report = write_report(tmp_path).read_text()

    results = json.loads((tmp_path / "results.json").read_text())
    assert results["valid"] is False
    assert results["checkers"].pop("throwaway") == {
        "valid": False, "count": 1, "examples": [{"events": list(sent["m2"]), "value": "m2"}]}
    assert all(checker["valid"] is True for checker in results["checkers"].values())
    assert 'data-anomaly="throwaway"' in report
    assert THROWAWAY.definition in report
