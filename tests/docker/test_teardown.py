"""Teardown leaves nothing behind: not after success, a failed start, Ctrl-C, SIGTERM, nor
a harness killed with SIGKILL (the reaper, or `starquake cluster down`, removes its run;
the reaper saves the nodes' logs first).

Each harness here runs two clusters with a WAN cut in force, so there are containers,
three networks and iptables rules to leave behind.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import docker.errors
import pytest
from docker import DockerClient
from docker.models.networks import Network

from harness.targets.docker.deployment import DockerDeployment
from harness.targets.docker.engine import new_run_id
from harness.targets.docker.resources import remove_run, run_containers, run_networks
from harness.topology import Topology
from harness.waits import NodeNotReady

pytestmark = pytest.mark.docker

REPO = Path(__file__).resolve().parents[2]
EXIT_WAIT_S = 180
"""How long a signalled harness may take to exit: its teardown removes four containers
and three networks, about 3 s on a quiet engine, but CI's engine is shared with other
modules' clusters (a CI run once took over 60 s)."""


def left_behind(client: DockerClient, run_id: str | None) -> list[str]:
    """What teardown left of ours. A network the engine keeps for a stale endpoint (no
    container attached, and it still refuses removal) is the engine's fault, which
    teardown only warns about; any other network counts."""
    return ([c.name for c in run_containers(client, run_id)]
            + [n.name for n in run_networks(client, run_id) if not _gone_or_stale(n)])


def _gone_or_stale(network: Network) -> bool:
    """Removed since the listing (a reaper at work while we look), or stale."""
    try:
        network.reload()  # a listing leaves out the containers attached
    except docker.errors.NotFound:
        return True
    if network.attrs.get("Containers"):
        return False
    try:
        network.remove()
    except docker.errors.APIError as exc:
        return "active endpoints" in str(exc.explanation or exc)
    return False  # it could be removed: teardown should have


def host_has_our_chain() -> bool:
    """Rules live only in the nodes' namespaces; the host's tables must never hold them."""
    rules = subprocess.run(["iptables", "-S"], capture_output=True, text=True, check=True)
    return "STARQUAKE" in rules.stdout


class Harness:
    """A harness process of tests/docker/harness_process.py."""

    def __init__(self, reaper: bool, run_dir: Path | None = None) -> None:
        self.run_id = f"t{new_run_id()}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.docker.harness_process", self.run_id,
             *(["--reaper"] if reaper else []),
             *(["--run-dir", str(run_dir)] if run_dir is not None else [])],
            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def wait_ready(self, timeout: float = 60.0) -> None:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else ""
        assert line.strip() == f"ready {self.run_id}", (
            f"harness not ready: {line!r}; stderr: {self.stderr()}")

    def stderr(self) -> str:
        if self.process.poll() is None or self.process.stderr is None:
            return "(still running)"
        return self.process.stderr.read()

    def signal(self, signum: signal.Signals) -> int:
        """Send `signum` and wait for the exit. The wait is generous (a loaded engine can
        be slow to remove containers); one that runs out fails with the harness's stacks."""
        os.kill(self.process.pid, signum)
        try:
            return self.process.wait(EXIT_WAIT_S)
        except subprocess.TimeoutExpired:
            os.kill(self.process.pid, signal.SIGUSR1)
            time.sleep(1)
            self.process.kill()
            self.process.wait()
            pytest.fail(f"harness still running {EXIT_WAIT_S} s after {signum.name}; "
                        f"its stacks and stderr:\n{self.stderr()}")

    def end(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def harnesses(docker_client: DockerClient) -> Iterator[list[Harness]]:
    started: list[Harness] = []
    yield started
    for harness in started:
        harness.end()
        remove_run(docker_client, harness.run_id)


def starquake(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "starquake", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


def test_sigkilled_harness_leaves_nothing_after_cluster_down(
        harnesses: list[Harness], docker_client: DockerClient) -> None:
    harness = Harness(reaper=False)
    harnesses.append(harness)
    harness.wait_ready()
    assert harness.signal(signal.SIGKILL) == -signal.SIGKILL
    assert len(run_containers(docker_client, harness.run_id)) == 4  # nobody cleaned up

    down = starquake("cluster", "down", harness.run_id)
    assert down.returncode == 0, down.stderr
    assert f"removed 4 containers and 3 networks of {harness.run_id}" in down.stdout
    assert left_behind(docker_client, harness.run_id) == []
    assert not host_has_our_chain()


def test_the_reaper_saves_the_logs_and_removes_a_sigkilled_harnesss_run(
        harnesses: list[Harness], docker_client: DockerClient, tmp_path: Path) -> None:
    harness = Harness(reaper=True, run_dir=tmp_path)
    harnesses.append(harness)
    harness.wait_ready()
    harness.signal(signal.SIGKILL)
    deadline = time.monotonic() + 60
    while left_behind(docker_client, harness.run_id) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert left_behind(docker_client, harness.run_id) == []
    logs = sorted(path.name for path in (tmp_path / "logs").iterdir())
    assert logs == ["a-zk1.log", "b-zk1.log"]
    assert "binding to port" in (tmp_path / "logs/a-zk1.log").read_text().lower()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_harness_tears_down_before_it_exits(
        signum: signal.Signals, harnesses: list[Harness], docker_client: DockerClient) -> None:
    harness = Harness(reaper=False)
    harnesses.append(harness)
    harness.wait_ready()
    returncode = harness.signal(signum)
    assert returncode != 0, "the harness slept out its wait: the signal went unheeded"
    assert left_behind(docker_client, harness.run_id) == [], harness.stderr()


def test_a_harness_interrupted_while_starting_removes_what_it_started(
        harnesses: list[Harness], docker_client: DockerClient) -> None:
    harness = Harness(reaper=False)
    harnesses.append(harness)
    deadline = time.monotonic() + 60
    while not run_containers(docker_client, harness.run_id) and time.monotonic() < deadline:
        time.sleep(0.05)
    harness.signal(signal.SIGINT)
    assert left_behind(docker_client, harness.run_id) == [], harness.stderr()


def test_a_failed_start_removes_what_was_started(docker_client: DockerClient) -> None:
    # No ZooKeeper serves within zero seconds: the wait fails after containers exist.
    deployment = DockerDeployment(Topology(zookeepers=1, bookies=0, brokers=0),
                                  client=docker_client, image_source="import",
                                  start_timeout=0)
    with pytest.raises(NodeNotReady, match="a-zk1 not ready after 0 s"):
        deployment.up()
    assert left_behind(docker_client, deployment.run_id) == []


@pytest.mark.engine_wide
def test_cluster_down_all_removes_every_run(harnesses: list[Harness],
                                            docker_client: DockerClient) -> None:
    """`--all` is global: it also removes runs of other sessions on this engine. So it
    runs while no other module of the session is under way (`engine_wide`): a module's
    deployment, even one its tests share, is gone before this test starts."""
    for _ in range(2):
        harness = Harness(reaper=False)
        harnesses.append(harness)
        harness.wait_ready()
        harness.signal(signal.SIGKILL)
    down = starquake("cluster", "down", "--all")
    assert down.returncode == 0, down.stderr
    assert all(h.run_id in down.stdout for h in harnesses)
    assert left_behind(docker_client, None) == []
    assert not host_has_our_chain()
