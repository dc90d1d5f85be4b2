"""The check worker a suite judges its runs through: one Spark session for many runs, each
run's output in its own check.log, bad input answered without ending the worker, and a
worker that dies replaced at the next run."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
from pathlib import Path

import pytest

from checkers.spark_settings import SparkSettings
from checkers.synthetic import SyntheticSpec, write_jsonl
from history.errors import BAD_INPUT, INVALID, VALID
from starquake.run.check_worker import CheckWorker


def _run_dir(top: Path, name: str, spec: SyntheticSpec) -> Path:
    run = top / name
    run.mkdir()
    write_jsonl(spec, run / "history.jsonl")
    return run


def _corrupt(top: Path) -> Path:
    run = top / "corrupt"
    run.mkdir()
    (run / "history.jsonl").write_text('{"index": 0, "process": "harness"\n{not json}\n')
    return run


@pytest.mark.spark
def test_one_worker_judges_runs_in_turn_and_survives_bad_input(tmp_path: Path) -> None:
    spec = SyntheticSpec(messages=300, keys=4)
    valid = _run_dir(tmp_path, "valid", spec)
    lost = _run_dir(tmp_path, "lost", dataclasses.replace(spec, inject={"lost": 2}))
    corrupt = _corrupt(tmp_path)

    with CheckWorker(SparkSettings()) as checks:
        assert checks.judge(valid) == VALID
        worker = checks._process
        assert checks.judge(corrupt) == BAD_INPUT
        assert checks.judge(lost) == INVALID
        assert checks._process is worker, "bad input must not end the worker"

    assert worker is not None and worker.returncode == 0
    assert json.loads((valid / "results.json").read_text())["valid"] is True
    assert json.loads((lost / "results.json").read_text())["checkers"]["lost"]["count"] == 2
    assert not (corrupt / "results.json").exists()
    assert "history.jsonl" in (corrupt / "check.log").read_text().splitlines()[-1]
    lost_log = (lost / "check.log").read_text()
    assert "lost              INVALID  2" in lost_log and "valid/" not in lost_log


def test_a_worker_that_died_is_started_again(tmp_path: Path) -> None:
    """Bad input is answered before any Spark session starts, so this needs no JVM."""
    corrupt = _corrupt(tmp_path)
    with CheckWorker(SparkSettings()) as checks:
        assert checks.judge(corrupt) == BAD_INPUT
        worker = checks._process
        assert worker is not None
        os.kill(worker.pid, signal.SIGKILL)
        worker.wait()
        assert checks.judge(corrupt) == BAD_INPUT
        assert checks._process is not None and checks._process is not worker
