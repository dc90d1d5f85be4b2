"""Our reference implementation started on its own in containers (`starquake cluster up`)
and validated as a third party's system through a target file naming its containers:
every feature that acts on the nodes (faults through the containers' control, partitions
by iptables, a lookup service, two clusters) passes, and authentication, which these
brokers run without (the target file gives no token), is unsupported, not failed. The
fault-free features that only talk to the brokers, `client-contract` and
`scalable-topics`, pass against served processes in tests/conform/test_serve_hooks.py;
running them here again would add minutes and no path of the target's control."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker import DockerClient

from harness.targets.docker.engine import new_run_id
from harness.targets.docker.resources import remove_run
from tests.conform.helpers import REPO, conform, explain, statuses

pytestmark = [pytest.mark.docker, pytest.mark.spark, pytest.mark.slow]


@pytest.fixture
def containers(docker_client: DockerClient, tmp_path: Path) -> Iterator[Path]:
    run = f"t{new_run_id()}"
    target = tmp_path / "target.toml"
    try:
        up = subprocess.run([sys.executable, "-m", "starquake", "cluster", "up", "--clusters",
                             "2", "--brokers", "2", "--lookup", "--run-id", run,
                             "--target-file", str(target)],
                            cwd=REPO, capture_output=True, text=True, timeout=300)
        assert up.returncode == 0, up.stderr
        yield target
    finally:
        remove_run(docker_client, run)


CONTAINER_FEATURES = ("durability-kill", "durability-pause", "durability-partition",
                      "durability-metadata-cut", "geo-replication", "tenant-migration",
                      "authentication")


def test_every_feature_that_acts_on_nodes_passes_through_container_names(
        containers: Path, tmp_path: Path) -> None:
    assert 'control = "docker"' in containers.read_text()
    done, document = conform(containers, tmp_path / "runs", "--features",
                             ",".join(CONTAINER_FEATURES), timeout=1500)
    assert done.returncode == 0, explain(done)
    found = statuses(document)
    assert found.pop("authentication") == "unsupported", statuses(document)
    assert found == dict.fromkeys(CONTAINER_FEATURES[:-1], "pass"), found
