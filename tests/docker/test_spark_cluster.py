"""`starquake check` on a Spark standalone cluster of containers: a master and two workers,
each with its own address and its own processes, the driver on this machine, the run
directory outside the shared directory (so the prepared files are staged there). The
results must be those of `local[*]`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from docker import DockerClient

from harness.targets.docker.images import NodeImage
from harness.targets.docker.resources import run_containers
from harness.targets.docker.spark_cluster import spark_cluster

pytestmark = [pytest.mark.docker, pytest.mark.spark, pytest.mark.slow]

STARQUAKE = [sys.executable, "-m", "starquake"]
INJECTED = {"lost": 3, "duplicate": 2, "order": 1}


def _judged(run: Path, *options: str) -> dict[str, Any]:
    done = subprocess.run([*STARQUAKE, "check", str(run), *options], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 1, done.stdout + done.stderr[-4000:]
    results: dict[str, Any] = json.loads((run / "results.json").read_text())
    return results


def _verdicts(results: dict[str, Any]) -> dict[str, Any]:
    return {"valid": results["valid"], "events": results["events"],
            "checkers": {name: (c["valid"], c["count"], c.get("undecided"))
                         for name, c in results["checkers"].items()}}


def test_check_on_a_cluster_of_containers_matches_local(
        tmp_path: Path, docker_client: DockerClient, image: NodeImage) -> None:
    inject = ",".join(f"{kind}={count}" for kind, count in INJECTED.items())
    run, local_run, shared = tmp_path / "run", tmp_path / "local", tmp_path / "shared"
    shared.mkdir()
    for directory in (run, local_run):
        subprocess.run([*STARQUAKE, "synth", str(directory), "--messages", "3000",
                        "--seed", "5", "--inject", inject], check=True, timeout=120)
    local = _judged(local_run)
    with spark_cluster(docker_client, image, workers=2, shared_dir=shared) as cluster:
        remote = _judged(run, "--spark-master", cluster.master_url,
                         "--spark-driver-host", cluster.driver_host,
                         "--spark-python", cluster.python, "--spark-shared-dir", str(shared))
        executors_ran = [node.name for node in cluster.workers
                         if "Asked to launch executor" in node.logs()]
        run_id = cluster.workers[0].process.labels["starquake"]
    assert _verdicts(remote) == _verdicts(local)
    assert {name: remote["checkers"][name]["count"] for name in INJECTED} == INJECTED
    assert len(executors_ran) == 2, "both workers ran executors"
    assert list(shared.iterdir()) == [], "the staged copy is removed after the check"
    assert run_containers(docker_client, run_id) == []
