"""Kill, start, pause and resume on real containers: each has the effect it claims, and a
node's partition outlives a crash of its process (the namespace is the machine's)."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from kazoo.client import KazooClient

from harness.targets.docker.containers import NodeSpec
from harness.targets.docker.deployment import DockerDeployment
from harness.targets.docker.iptables import IptablesNetwork
from harness.waits import LogLine, TcpPort, serving_mode
from nemesis.partition import Partitioner
from nemesis.process import ProcessFaults
from tests.docker.conftest import reachable

pytestmark = pytest.mark.docker

# A ZooKeeper client living in a container: it holds an ephemeral node and reports every
# change of its session's state on stdout.
SESSION_HOLDER = """
import sys, time
from kazoo.client import KazooClient
client = KazooClient(sys.argv[1], timeout=2.0)
client.add_listener(lambda state: print("state", state, flush=True))
client.start(15)
client.create("/holder", b"", ephemeral=True)
print("holding /holder", flush=True)
for _ in range(600):
    time.sleep(0.5)
"""


def wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def test_kill_stops_the_node_and_start_brings_it_back_with_its_data(
        deploy: Callable[..., DockerDeployment]) -> None:
    deployment = deploy(zookeepers=1, bookies=0, brokers=0)
    zk = deployment.clusters["a"].zookeepers[0]
    client = KazooClient(f"{zk.ip}:2181", timeout=10)
    client.start(15)
    client.create("/before-the-crash", b"kept")
    client.stop()

    faults = ProcessFaults()
    event = faults.kill([zk])
    assert event.targets == ("a-zk1",)
    assert zk.status() == "exited"
    assert not TcpPort(2181).ready(zk)

    faults.start([zk])
    zk.wait_ready(30)
    client = KazooClient(f"{zk.ip}:2181", timeout=10)
    client.start(15)
    try:
        assert client.get("/before-the-crash")[0] == b"kept"
    finally:
        client.stop()


def test_pause_freezes_the_node_and_resume_thaws_it(
        deploy: Callable[..., DockerDeployment]) -> None:
    deployment = deploy(zookeepers=1, bookies=0, brokers=0)
    zk = deployment.clusters["a"].zookeepers[0]
    faults = ProcessFaults()
    faults.pause([zk])
    assert zk.status() == "paused"
    # The kernel still accepts connections; nothing answers on them.
    assert TcpPort(2181).ready(zk)
    assert serving_mode(zk.ip, 2181) is None
    faults.resume([zk])
    assert wait_for(lambda: serving_mode(zk.ip, 2181) == "standalone")


def test_a_paused_clients_session_expires(deploy: Callable[..., DockerDeployment]) -> None:
    deployment = deploy(zookeepers=1, bookies=0, brokers=0)
    image = deployment.image
    assert image is not None
    cluster = deployment.clusters["a"]
    holder = deployment.add_node("a", "a-client1", "client", NodeSpec(
        command=(image.python, "-c", SESSION_HOLDER, cluster.zk_connect_string),
        wait=LogLine(r"^holding /holder")))
    observer = KazooClient(cluster.zk_connect_string, timeout=10)
    observer.start(15)
    try:
        assert observer.exists("/holder")
        ProcessFaults().pause([holder])
        # PIP-57's long GC: the server expires the frozen client's session.
        assert wait_for(lambda: observer.exists("/holder") is None, timeout=20)
        holder.resume()
        assert wait_for(lambda: "state LOST" in holder.logs(), timeout=20)
    finally:
        observer.stop()


def test_a_partition_outlives_a_crash_of_the_nodes_process(
        deploy: Callable[..., DockerDeployment]) -> None:
    deployment = deploy(zookeepers=3, bookies=0, brokers=0)
    image = deployment.image
    assert image is not None
    zk1, zk2, _ = deployment.clusters["a"].zookeepers
    partitioner = Partitioner(IptablesNetwork(deployment.nodes))
    partitioner.isolate("a-zk1")
    faults = ProcessFaults()
    faults.kill([zk1])
    faults.start([zk1])
    assert wait_for(lambda: zk1.status() == "running")
    assert reachable(image, zk1, {"a-zk2": f"{zk2.ip}:2181"}) == set()
    # Alone, it cannot join a quorum, however long it tries.
    assert not wait_for(lambda: serving_mode(zk1.ip, 2181) is not None, timeout=5)

    partitioner.heal()
    assert reachable(image, zk1, {"a-zk2": f"{zk2.ip}:2181"}) == {"a-zk2"}
    assert wait_for(lambda: serving_mode(zk1.ip, 2181) is not None)
