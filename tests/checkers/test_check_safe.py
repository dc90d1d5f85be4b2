"""Check-safe: a checker whose finder raises, while the check plans it or only when Spark
runs the job, is unknown with its error, and every other checker still judges; the verdict
is then unknown, unless another checker found an anomaly (false beats unknown)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers import forked_position, segments
from checkers.anomaly import CheckSettings, anomalies
from checkers.check import check_runs, write_results
from checkers.frames import HistoryFrames
from checkers.load import prepare
from reports.report import write_report
from tests.checkers.builder import History

pytestmark = pytest.mark.spark


def _run(directory: Path, lose: str | None = None) -> Path:
    """Three values sent, delivered and acked, except `lose`, never delivered."""
    history = History(directory / "history.jsonl")
    history.subscribe("s", "exclusive")
    for n, value in enumerate(("m1", "m2", "m3")):
        history.send(value, position=f"1:{n}")
    for n, value in enumerate(("m1", "m2", "m3")):
        if value != lose:
            history.recv(value, position=f"1:{n}")
            history.ack(value)
    history.drain()
    history.close()
    return directory


def _checked(spark, run_dir: Path) -> dict[str, Any]:
    (result,) = check_runs(spark, {"run": prepare(run_dir / "history.jsonl")}, CheckSettings())
    write_results(result)
    results: dict[str, Any] = json.loads((run_dir / "results.json").read_text())
    return results


def test_a_finder_raising_while_planned_fails_only_the_checkers_it_decides(
        spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def upside_down(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
        raise RuntimeError("the layouts are upside down")

    monkeypatch.setattr(segments, "segment_checks", upside_down)
    results = _checked(spark, _run(tmp_path))

    failed = {"valid": "unknown", "count": 0, "examples": [],
              "error": {"type": "RuntimeError", "message": "the layouts are upside down"}}
    assert results["checkers"].pop("dual-write") == failed
    assert results["checkers"].pop("misrouted") == failed
    assert all(checker["valid"] is True for checker in results["checkers"].values())
    assert results["valid"] == "unknown"
    report = write_report(tmp_path).read_text()
    assert 'data-verdict="unknown"' in report
    assert 'data-anomaly="dual-write"' in report
    assert "RuntimeError: the layouts are upside down" in report


def test_a_finder_failing_in_the_job_fails_only_its_checker(
        spark, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(value: str) -> str:
        raise ValueError(f"no position fits {value}")

    def failing_in_job(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
        sends = frames.ops.filter(F.col("f") == "send")
        return anomalies("forked-position", sends, "inv_index", ["inv_index"],
                         position=F.udf(refuse, "string")("value"))

    monkeypatch.setattr(forked_position, "forked_position", failing_in_job)
    results = _checked(spark, _run(tmp_path, lose="m2"))

    forked = results["checkers"].pop("forked-position")
    assert (forked["valid"], forked["count"], forked["examples"]) == ("unknown", 0, [])
    assert "ValueError: no position fits" in forked["error"]["message"], forked["error"]
    assert results["checkers"].pop("lost")["count"] == 1
    assert all(checker["valid"] is True for checker in results["checkers"].values())
    assert results["valid"] is False
