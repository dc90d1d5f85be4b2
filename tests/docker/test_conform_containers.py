"""Our reference implementation started on its own in containers (`starquake cluster up`)
and validated as a third party's system through a target file naming its containers:
every feature passes but authentication, which these brokers run without (the target file
gives no token, so the feature is unsupported, not failed)."""

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


def test_every_feature_passes_through_container_names(containers: Path,
                                                      tmp_path: Path) -> None:
    assert 'control = "docker"' in containers.read_text()
    done, document = conform(containers, tmp_path / "runs", timeout=1500)
    assert done.returncode == 0, explain(done)
    found = statuses(document)
    assert found.pop("authentication") == "unsupported", statuses(document)
    assert set(found.values()) == {"pass"}, statuses(document)
