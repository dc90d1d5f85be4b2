"""ZooKeeper ensembles in containers: serving to clients on this machine over the bridge
network, labelled with the run, with every node's log saved into the run directory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from docker import DockerClient
from kazoo.client import KazooClient

from harness.targets.docker.deployment import DockerDeployment
from harness.targets.docker.engine import NODE_LABEL, RUN_LABEL
from harness.targets.docker.resources import run_containers, run_networks
from harness.waits import serving_mode

pytestmark = pytest.mark.docker


def test_three_node_ensemble_serves_clients_on_this_machine(
        deploy: Callable[..., DockerDeployment]) -> None:
    deployment = deploy(zookeepers=3, bookies=0, brokers=0)
    zookeepers = deployment.clusters["a"].zookeepers
    assert sorted(serving_mode(zk.ip, 2181) or "-" for zk in zookeepers) == [
        "follower", "follower", "leader"]
    writer = KazooClient(f"{zookeepers[0].ip}:2181", timeout=10)
    reader = KazooClient(f"{zookeepers[2].ip}:2181", timeout=10)
    writer.start(15)
    reader.start(15)
    try:
        writer.create("/written-on-zk1", b"hello")
        reader.sync("/written-on-zk1")
        assert reader.get("/written-on-zk1")[0] == b"hello"
    finally:
        writer.stop()
        reader.stop()


def test_every_container_and_network_carries_the_run_label(
        deploy: Callable[..., DockerDeployment], docker_client: DockerClient) -> None:
    deployment = deploy(clusters=("a", "b"), zookeepers=1, bookies=0, brokers=0)
    containers = run_containers(docker_client, deployment.run_id)
    # Each node: its process and the container holding its network namespace.
    assert len(containers) == 4
    assert {c.labels[NODE_LABEL] for c in containers} == {"a-zk1", "b-zk1"}
    networks = {n.name for n in run_networks(docker_client, deployment.run_id)}
    assert networks == {f"sq-{deployment.run_id}-{name}" for name in ("a", "b", "wan")}
    assert all(c.labels[RUN_LABEL] == deployment.run_id for c in containers)
    # Each node has an address on its cluster's network and on the WAN.
    assert all(len(node.ips) == 2 for node in deployment.nodes)


def test_down_saves_each_nodes_log_into_the_run_directory(
        deploy: Callable[..., DockerDeployment], docker_client: DockerClient,
        tmp_path: Path) -> None:
    deployment = deploy(run_dir=tmp_path / "run", zookeepers=1, bookies=0, brokers=0)
    deployment.down()
    log = (tmp_path / "run" / "logs" / "a-zk1.log").read_text()
    assert "binding to port" in log or "clientPortAddress" in log
    assert run_containers(docker_client, deployment.run_id) == []
