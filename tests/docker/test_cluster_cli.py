"""`starquake cluster up`, `ls` and `down` as a user exploring would run them."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker import DockerClient
from kazoo.client import KazooClient

from harness.targets.docker.engine import new_run_id
from harness.targets.docker.resources import remove_run, run_containers

REPO = Path(__file__).resolve().parents[2]


def starquake(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "starquake", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=180)


@pytest.fixture
def run_id(docker_client: DockerClient) -> Iterator[str]:
    run = f"t{new_run_id()}"
    yield run
    remove_run(docker_client, run)


@pytest.mark.docker
def test_up_leaves_a_cluster_to_explore_and_down_removes_it(
        run_id: str, docker_client: DockerClient) -> None:
    up = starquake("cluster", "up", "--zookeepers", "1", "--bookies", "0", "--brokers", "0",
                   "--run-id", run_id)
    assert up.returncode == 0, up.stderr
    assert f"remove with: starquake cluster down {run_id}" in up.stdout
    address = re.search(r"^a-zk1\s+zookeeper\s+(\S+)", up.stdout, re.MULTILINE)
    assert address, up.stdout
    client = KazooClient(f"{address.group(1)}:2181", timeout=10)
    client.start(15)  # the command has returned; the cluster serves on
    client.stop()

    listed = starquake("cluster", "ls")
    assert f"{run_id}: clusters a; nodes a-zk1 (running)" in listed.stdout

    down = starquake("cluster", "down", run_id)
    assert down.returncode == 0, down.stderr
    assert run_containers(docker_client, run_id) == []
    again = starquake("cluster", "down", run_id)
    assert again.returncode == 0 and f"nothing to remove for run {run_id}" in again.stdout


def test_down_needs_a_run_or_all() -> None:
    result = starquake("cluster", "down")
    assert result.returncode == 3
    assert "give either a RUN_ID or --all" in result.stderr


def test_up_refuses_a_scenario_for_local_processes(tmp_path: Path) -> None:
    scenario = tmp_path / "local.toml"
    scenario.write_text('[topology]\nbackend = "local"\n')
    result = starquake("cluster", "up", str(scenario))
    assert result.returncode == 3
    assert f"{scenario}: topology.backend is 'local'" in result.stderr
