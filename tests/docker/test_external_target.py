"""A target file over containers starquake did not deploy: the docker control kills,
starts, pauses and resumes them through the engine, partitions them with iptables entered
from the host (also through a container sharing another's namespace), keeps a drop across
a kill, and heals leaving no rule of ours behind; a missing container is exit code 4."""

from __future__ import annotations

import secrets
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from docker import DockerClient
from docker.models.containers import Container

from harness.targets.docker.engine import RUN_LABEL
from harness.targets.docker.images import NodeImage
from harness.targets.docker.iptables import CHAIN
from harness.targets.external.docker_control import ContainerControl, partition_problem
from harness.targets.external.file import load_target_file
from harness.targets.external.reachability import TargetUnreachable, check_reachable
from harness.targets.external.target import ExternalTarget
from history.errors import ENVIRONMENT
from tests.docker.conftest import reachable
from tests.fixtures.recording import eventually

pytestmark = pytest.mark.docker

PORT = 8000


@dataclass
class Containers:
    """Two containers serving HTTP on PORT, each in its own namespace, and a third in the
    first one's namespace (`network_mode: container:`), as a compose file might have."""

    run_id: str
    first: Container
    second: Container
    sidecar: Container

    def ip(self, container: Container) -> str:
        container.reload()
        networks = container.attrs["NetworkSettings"]["Networks"]
        return str(next(iter(networks.values()))["IPAddress"])


@pytest.fixture
def containers(docker_client: DockerClient, image: NodeImage) -> Iterator[Containers]:
    run_id = f"external-{secrets.token_hex(3)}"
    started: list[Container] = []

    def run(suffix: str, command: list[str], **options: object) -> Container:
        container = docker_client.containers.run(
            image.tag, command, name=f"sq-{run_id}-{suffix}", detach=True, init=True,
            labels={RUN_LABEL: run_id, "starquake.external-test": f"{run_id}-{suffix}"},
            volumes=image.volumes, environment=dict(image.environment), **options)
        started.append(container)
        return container

    try:
        server = [image.python, "-m", "http.server", str(PORT)]
        first = run("first", server)
        second = run("second", server)
        sidecar = run("sidecar", ["sleep", "infinity"], network_mode=f"container:{first.id}")
        yield Containers(run_id, first, second, sidecar)
    finally:
        for container in reversed(started):
            container.remove(force=True)


def target_file(tmp_path: Path, containers: Containers) -> Path:
    first_ip = containers.ip(containers.first)
    path = tmp_path / "target.toml"
    path.write_text(f"""
session_timeout_s = 4

[[clusters]]
name = "x"
service_urls = ["pulsar://{first_ip}:{PORT}"]
admin_urls = ["http://{first_ip}:{PORT}"]

[[clusters.nodes]]
name = "x-broker1"
role = "broker"
control = "docker"
container = "{containers.first.name}"

[[clusters.nodes]]
name = "x-bookie1"
role = "bookie"
control = "docker"
labels = {{ "starquake.external-test" = "{containers.run_id}-second" }}

[[clusters.nodes]]
name = "x-zk1"
role = "zookeeper"
control = "docker"
container = "{containers.sidecar.id}"
""")
    return path


@pytest.fixture
def target(tmp_path: Path, containers: Containers, docker_client: DockerClient
           ) -> ExternalTarget:
    return ExternalTarget(load_target_file(target_file(tmp_path, containers)), docker_client)


def status(container: Container) -> str:
    container.reload()
    return str(container.status)


def test_addresses_are_learned_and_capabilities_follow_the_host(
        target: ExternalTarget, containers: Containers) -> None:
    nodes = {node.name: node for node in target.clusters[0].nodes}
    assert nodes["x-broker1"].address == containers.ip(containers.first)
    assert nodes["x-bookie1"].address == containers.ip(containers.second)
    assert nodes["x-zk1"].address == containers.ip(containers.first)  # its namespace's
    expected = {"kill", "pause"} | (set() if partition_problem() else {"partition",
                                                                       "cut-clients"})
    assert all(node.capabilities == expected for node in nodes.values())
    check_reachable(target)


def test_kill_start_pause_resume_act_on_the_container(
        target: ExternalTarget, containers: Containers) -> None:
    control = target.control("x-bookie1")
    control.kill()
    assert status(containers.second) == "exited"
    control.kill()  # nothing to do
    control.start()
    assert status(containers.second) == "running"
    control.pause()
    assert status(containers.second) == "paused"
    control.resume()
    assert status(containers.second) == "running"
    control.pause()
    control.kill()  # a paused node can crash too
    assert status(containers.second) == "exited"
    control.start()
    assert status(containers.second) == "running"


def rules(control: ContainerControl) -> str:
    code, output = control.run_in_netns(["iptables-save"])
    assert code == 0, output
    return output


def host_reaches(address: str) -> bool:
    """Whether this machine (where the workloads' clients run) connects to `address`."""
    host, port = address.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=1.0):
            return True
    except OSError:
        return False


@pytest.mark.skipif(partition_problem() is not None, reason=str(partition_problem()))
def test_partition_drops_then_heal_leaves_no_rule_of_ours(
        target: ExternalTarget, containers: Containers, image: NodeImage) -> None:
    network = target.network
    assert network is not None
    first, second = (target.containers()[name] for name in ("x-broker1", "x-bookie1"))
    at = {"first": f"{containers.ip(containers.first)}:{PORT}",
          "second": f"{containers.ip(containers.second)}:{PORT}"}

    def links() -> set[str]:
        return ({f"first->{name}" for name in reachable(image, first, {"second": at["second"]})}
                | {f"second->{name}" for name in reachable(image, second, {"first": at["first"]})})

    both = {"first->second", "second->first"}
    eventually(lambda: links() == both)

    network.drop("x-broker1", ["x-bookie1"])  # both directions: replies are dropped too
    assert links() == set()
    network.drop("x-broker1", [])
    assert links() == both
    assert CHAIN not in rules(first)

    network.drop("x-broker1", ["x-bookie1"], to_port=PORT)  # only what reaches first's port
    assert links() == {"first->second"}
    network.drop("x-broker1", [])
    assert links() == both

    # A client cut of first's port spares the file's nodes and drops this machine.
    eventually(lambda: host_reaches(at["first"]))
    network.cut_clients("x-broker1", PORT)
    assert links() == both and not host_reaches(at["first"])
    network.drop("x-broker1", [])
    eventually(lambda: host_reaches(at["first"]))
    assert CHAIN not in rules(first)

    # The sidecar lives in first's namespace: partitioning it is partitioning first.
    network.drop("x-zk1", ["x-bookie1"])
    assert links() == set()
    network.drop("x-zk1", [])
    assert links() == both
    assert CHAIN not in rules(first) and CHAIN not in rules(second)


@pytest.mark.skipif(partition_problem() is not None, reason=str(partition_problem()))
def test_a_drop_outlives_a_kill_of_a_container_with_its_own_namespace(
        target: ExternalTarget, containers: Containers, image: NodeImage) -> None:
    network = target.network
    assert network is not None
    first, second = (target.containers()[name] for name in ("x-broker1", "x-bookie1"))
    second_at = {"second": f"{containers.ip(containers.second)}:{PORT}"}
    eventually(lambda: reachable(image, first, second_at) == {"second"})

    network.drop("x-bookie1", ["x-broker1"])
    target.control("x-bookie1").kill()
    target.control("x-bookie1").start()
    assert f"-A {CHAIN} -s {containers.ip(containers.first)}/32 -j DROP" in rules(second)
    time.sleep(2)  # long enough for the server to listen again
    assert reachable(image, first, second_at) == set()
    network.drop("x-bookie1", [])
    eventually(lambda: reachable(image, first, second_at) == {"second"})
    assert CHAIN not in rules(second)


def test_a_missing_container_cannot_be_reached(
        tmp_path: Path, containers: Containers, docker_client: DockerClient) -> None:
    path = target_file(tmp_path, containers)
    path.write_text(path.read_text().replace(f'"{containers.first.name}"',
                                             f'"{containers.first.name}-gone"'))
    with pytest.raises(TargetUnreachable) as caught:
        check_reachable(ExternalTarget(load_target_file(path), docker_client))
    assert caught.value.exit_code == ENVIRONMENT
    assert str(caught.value) == (f"x-broker1: container '{containers.first.name}-gone' cannot "
                                 f"be reached: the Docker engine has no such container")

