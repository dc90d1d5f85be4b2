"""`starquake check` end to end: many runs in one job, a summary, exit codes; and the same
check on a real standalone Spark cluster started from the pyspark installation."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyspark
import pytest

from checkers.synthetic import SyntheticSpec, write_jsonl, write_parquet
from harness.ports import free_ports

STARQUAKE = [sys.executable, "-m", "starquake"]


def _check(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*STARQUAKE, "check", *args], capture_output=True, text=True,
                          timeout=600, env=env)


@pytest.mark.spark
@pytest.mark.slow
def test_directory_of_runs_is_checked_in_one_job(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    valid = runs / "smoke" / "20261122-1"
    broken = runs / "smoke" / "20261122-2"
    for run in (valid, broken):
        run.mkdir(parents=True)
    write_jsonl(SyntheticSpec(messages=300, keys=4), valid / "history.jsonl")
    write_parquet(SyntheticSpec(messages=300, keys=4, inject={"lost": 2}),
                  broken / "history.parquet")
    (runs / "latest").symlink_to(broken)

    done = _check(str(runs))
    assert done.returncode == 1, done.stderr
    summary = json.loads((runs / "summary.json").read_text())
    assert set(summary["runs"]) == {"smoke/20261122-1", "smoke/20261122-2"}
    assert summary["runs"]["smoke/20261122-2"]["anomalies"] == {"lost": 2}
    assert summary["runs"]["smoke/20261122-1"]["valid"] is True
    assert json.loads((valid / "results.json").read_text())["valid"] is True
    assert (valid / "history.parquet").exists()  # written on first read of the jsonl


@pytest.fixture
def standalone_spark(tmp_path: Path) -> Iterator[str]:
    """A Spark master and one worker on loopback, stopped by pid afterwards."""
    spark_home = Path(pyspark.__file__).parent
    spark_class = spark_home / "bin" / "spark-class"
    port, master_ui, worker_ui = free_ports(3)
    env = {**os.environ, "SPARK_HOME": str(spark_home), "SPARK_LOCAL_IP": "127.0.0.1",
           "SPARK_LOG_DIR": str(tmp_path)}
    with open(tmp_path / "master.log", "w") as master_log, \
            open(tmp_path / "worker.log", "w") as worker_log:
        master = subprocess.Popen(
            [str(spark_class), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
             "--port", str(port), "--webui-port", str(master_ui)],
            stdout=master_log, stderr=subprocess.STDOUT, env=env)
        url = f"spark://127.0.0.1:{port}"
        worker = subprocess.Popen(
            [str(spark_class), "org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1",
             "--webui-port", str(worker_ui), "--cores", "2", "--memory", "2g",
             "--work-dir", str(tmp_path / "work")],
            stdout=worker_log, stderr=subprocess.STDOUT, env=env)
        try:
            deadline = time.monotonic() + 90
            while "Registering worker" not in (tmp_path / "master.log").read_text():
                assert time.monotonic() < deadline, (tmp_path / "master.log").read_text()[-2000:]
                assert master.poll() is None and worker.poll() is None
                time.sleep(0.5)
            yield url
        finally:
            for proc in (worker, master):
                if proc.poll() is None:
                    os.kill(proc.pid, signal.SIGTERM)
            for proc in (worker, master):
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.kill(proc.pid, signal.SIGKILL)
                    proc.wait()


@pytest.mark.spark
@pytest.mark.slow
def test_check_on_a_standalone_spark_cluster(tmp_path: Path, standalone_spark: str) -> None:
    run = tmp_path / "run"
    run.mkdir()
    write_parquet(SyntheticSpec(messages=500, keys=4, inject={"duplicate": 2, "order": 1}),
                  run / "history.parquet")
    env = {**os.environ, "STARQUAKE_SPARK_MASTER": standalone_spark}
    done = _check(str(run), env=env)
    assert done.returncode == 1, done.stderr[-3000:]
    results = json.loads((run / "results.json").read_text())
    counts = {name: c["count"] for name, c in results["checkers"].items() if c["count"]}
    assert counts == {"duplicate": 2, "order": 1}
    master_log = (tmp_path / "master.log").read_text()
    assert "Registering app starquake-check" in master_log
