"""Every partition shape, applied to a real containerised ensemble, cuts exactly the links
its grudge names; the host still reaches every node; heal restores everything."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator

import pytest
from docker import DockerClient

from harness.targets.docker.containers import ContainerNode, NodeSpec
from harness.targets.docker.deployment import DockerDeployment
from harness.targets.docker.images import NodeImage
from harness.targets.docker.iptables import IptablesNetwork
from harness.topology import Topology
from harness.waits import TcpPort, serving_mode
from nemesis.events import NemesisEvent
from nemesis.grudge import Grudge
from nemesis.partition import Partitioner
from tests.docker.conftest import reachable

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def ensemble(docker_client: DockerClient) -> Iterator[DockerDeployment]:
    """Five ZooKeeper nodes: enough for every shape (a majorities ring needs four)."""
    deployment = DockerDeployment(Topology(zookeepers=5, bookies=0, brokers=0),
                                  client=docker_client, image_source="import")
    try:
        deployment.up()
        yield deployment
    finally:
        deployment.down()


@pytest.fixture
def partitioner(ensemble: DockerDeployment) -> Iterator[Partitioner]:
    partitioner = Partitioner(IptablesNetwork(ensemble.nodes))
    yield partitioner
    partitioner.heal()


def links(image: NodeImage, nodes: list[ContainerNode]) -> set[tuple[str, str]]:
    """(a, b) for every pair where a opens a connection to b's client port."""
    found = set()
    for source in nodes:
        targets = {n.name: f"{n.ip}:2181" for n in nodes if n is not source}
        found |= {(source.name, name) for name in reachable(image, source, targets)}
    return found


def claimed_links(grudge: Grudge, names: list[str]) -> set[tuple[str, str]]:
    """A TCP connection needs packets both ways: a reaches b unless either drops the other."""
    return {(a, b) for a in names for b in names if a != b
            and b not in grudge.get(a, ()) and a not in grudge.get(b, ())}


SHAPES: dict[str, Callable[[Partitioner], NemesisEvent]] = {
    "isolate": lambda p: p.isolate("a-zk2"),
    "random-halves": lambda p: p.random_halves(random.Random(7)),
    "bridge": lambda p: p.bridge(random.Random(7)),
    "majorities-ring": lambda p: p.majorities_ring(random.Random(7)),
    "cut": lambda p: p.brokers_from_zookeeper(["a-zk1", "a-zk2"], ["a-zk4", "a-zk5"]),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_each_shape_cuts_exactly_what_its_grudge_says(
        shape: str, ensemble: DockerDeployment, partitioner: Partitioner) -> None:
    nodes = ensemble.nodes
    names = [n.name for n in nodes]
    assert ensemble.image is not None
    assert links(ensemble.image, nodes) == claimed_links({}, names)

    event = SHAPES[shape](partitioner)
    assert partitioner.grudge, "the shape cut nothing"
    assert links(ensemble.image, nodes) == claimed_links(partitioner.grudge, names)
    # The clients run on this machine: a partition never cuts them off.
    assert all(TcpPort(2181).ready(node) for node in nodes)
    assert event.targets

    partitioner.heal()
    assert links(ensemble.image, nodes) == claimed_links({}, names)


def wait_for(condition: Callable[[], bool], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def test_an_isolated_member_stops_serving_and_the_majority_goes_on(
        ensemble: DockerDeployment, partitioner: Partitioner) -> None:
    zookeepers = ensemble.clusters["a"].zookeepers
    # Earlier tests' partitions may have left an election running: wait for its end.
    assert wait_for(lambda: all(serving_mode(zk.ip, 2181) for zk in zookeepers))
    leader = next(zk for zk in zookeepers if serving_mode(zk.ip, 2181) == "leader")
    partitioner.isolate(leader.name)
    assert wait_for(lambda: serving_mode(leader.ip, 2181) is None)
    others = [zk for zk in zookeepers if zk is not leader]
    assert wait_for(lambda: all(serving_mode(zk.ip, 2181) for zk in others))
    partitioner.heal()
    assert wait_for(lambda: all(serving_mode(zk.ip, 2181) for zk in zookeepers))


def test_wan_cut_separates_clusters_and_heal_wan_rejoins_them(
        deploy: Callable[..., DockerDeployment]) -> None:
    deployment = deploy(clusters=("a", "b"), zookeepers=1, bookies=0, brokers=0)
    image = deployment.image
    assert image is not None
    # ZooKeeper listens on its cluster address only; a web server in b listens on all.
    web = deployment.add_node("b", "b-web1", "web", NodeSpec(
        command=(image.python, "-m", "http.server", "9000"), wait=TcpPort(9000)))
    a = deployment.clusters["a"].zookeepers[0]
    across = {"b-web1": f"{web.ips[1]}:9000"}  # its address on the WAN
    assert reachable(image, a, across) == {"b-web1"}
    # Clusters meet only on the WAN: b's own network is out of a's reach.
    assert reachable(image, a, {"b-web1": f"{web.ip}:9000"}) == set()

    partitioner = Partitioner(IptablesNetwork(deployment.nodes))
    cluster_a = [n.name for n in deployment.clusters["a"].nodes]
    cluster_b = [n.name for n in deployment.clusters["b"].nodes]
    event = partitioner.cut_wan(cluster_a, cluster_b)
    assert reachable(image, a, across) == set()
    assert TcpPort(9000).ready(web) and TcpPort(2181).ready(a)

    heal = partitioner.heal()
    assert (event.f, heal.f) == ("cut-wan", "heal-wan")
    assert reachable(image, a, across) == {"b-web1"}
