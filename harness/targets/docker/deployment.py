"""A deployment of one or more clusters in containers: ZooKeeper, bookies and brokers.

`DockerDeployment(topology).up()` builds (or reuses) the node image, creates the networks,
gives every node its addresses, then starts ZooKeeper, the bookies and the brokers in that
order, each tier in parallel and waited for before the next. What each node runs comes
from the deployment's `ClusterSpecs`: our reference implementation's (`ReferenceSpecs`) by
default, Apache Pulsar's for the `apache-pulsar` backend
(harness/targets/apache_pulsar/node_specs.py). `down()` saves every node's
log into the run directory (when there is one) and removes everything labelled with the run
id. Used as a context manager it always tears down, also when starting fails half-way or a
Ctrl-C arrives; a reaper process (`reaper.py` beside this module) covers a harness killed
outright.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

from docker import DockerClient

from harness.targets.docker.containers import ContainerNode, NodeSpec
from harness.targets.docker.engine import connect, new_run_id
from harness.targets.docker.images import ImageSource, NodeImage, node_image
from harness.targets.docker.networks import DeploymentNetworks, create_networks
from harness.targets.docker.node_specs import (
    BROKER_ADMIN_PORT,
    BROKER_PORT,
    ZOOKEEPER_CLIENT_PORT,
    NodeSettings,
    bookie_spec,
    broker_spec,
    zookeeper_servers,
    zookeeper_spec,
)
from harness.targets.docker.reaper import Reaper
from harness.targets.docker.resources import Removed, remove_run, save_logs
from harness.topology import Topology

log = logging.getLogger(__name__)

T = TypeVar("T")


def _each(action: Callable[[T], object], items: Iterable[T]) -> None:
    """Run `action` on every item concurrently (the engine and the nodes do the work);
    the first failure is raised once all have finished."""
    items = list(items)
    if not items:
        return
    with ThreadPoolExecutor(max_workers=min(8, len(items))) as pool:
        futures = [pool.submit(action, item) for item in items]
    for future in futures:
        future.result()


@dataclass
class ClusterNodes:
    """The nodes of one cluster, by role, and the addresses clients need."""

    name: str
    zookeepers: list[ContainerNode] = field(default_factory=list)
    bookies: list[ContainerNode] = field(default_factory=list)
    brokers: list[ContainerNode] = field(default_factory=list)
    others: list[ContainerNode] = field(default_factory=list)
    """Nodes added with `DockerDeployment.add_node`."""

    @property
    def nodes(self) -> list[ContainerNode]:
        return [*self.zookeepers, *self.bookies, *self.brokers, *self.others]

    @property
    def zk_connect_string(self) -> str:
        """The ensemble, without a chroot."""
        return ",".join(f"{zk.ip}:{ZOOKEEPER_CLIENT_PORT}" for zk in self.zookeepers)

    @property
    def metadata_url(self) -> str:
        """ZooKeeper with the cluster's chroot: what its bookies and brokers use."""
        return f"{self.zk_connect_string}/{self.name}"

    @property
    def service_urls(self) -> list[str]:
        return [f"pulsar://{b.advertised_ip}:{BROKER_PORT}" for b in self.brokers]

    @property
    def admin_urls(self) -> list[str]:
        return [f"http://{b.advertised_ip}:{BROKER_ADMIN_PORT}" for b in self.brokers]


class ClusterSpecs(Protocol):
    """What a deployment runs on each node of a cluster, and what it does between tiers.
    Every method is called once the cluster's nodes have their addresses."""

    def image(self, base: NodeImage) -> NodeImage:
        """The image the nodes run: `base`, or `base` with more to mount."""

    def zookeeper(self, image: NodeImage, cluster: ClusterNodes, node_id: int) -> NodeSpec:
        """Member `node_id` (from 1) of the cluster's ensemble."""

    def initialize(self, cluster: ClusterNodes) -> None:
        """Once the cluster's ZooKeeper serves, before its bookies start."""

    def bookie(self, image: NodeImage, cluster: ClusterNodes, node: ContainerNode) -> NodeSpec:
        ...

    def broker(self, image: NodeImage, cluster: ClusterNodes, node: ContainerNode) -> NodeSpec:
        ...


@dataclass(frozen=True)
class ReferenceSpecs:
    """Our reference implementation's nodes (harness/targets/docker/node_specs.py)."""

    settings: NodeSettings
    session_expired_policy: str

    def image(self, base: NodeImage) -> NodeImage:
        return base

    def zookeeper(self, image: NodeImage, cluster: ClusterNodes, node_id: int) -> NodeSpec:
        servers = zookeeper_servers([zk.ip for zk in cluster.zookeepers])
        return zookeeper_spec(image, node_id, servers, self.settings)

    def initialize(self, cluster: ClusterNodes) -> None:
        """Nothing: our brokers create the cluster's metadata themselves."""

    def bookie(self, image: NodeImage, cluster: ClusterNodes, node: ContainerNode) -> NodeSpec:
        return bookie_spec(image, cluster.metadata_url, node.advertised_ip, self.settings)

    def broker(self, image: NodeImage, cluster: ClusterNodes, node: ContainerNode) -> NodeSpec:
        return broker_spec(image, cluster.name, cluster.metadata_url, node.advertised_ip,
                           self.session_expired_policy, self.settings)


class DockerDeployment:
    """The clusters of `topology` in containers of run `run_id`.

    `reaper=False` leaves the deployment up when this process dies (`starquake cluster up`
    for exploration); otherwise a watchdog removes it then. `specs` says what the nodes
    run: without it, our reference implementation with `settings`.
    """

    def __init__(self, topology: Topology, *, settings: NodeSettings = NodeSettings(),
                 run_id: str | None = None, image_source: ImageSource = "auto",
                 run_dir: Path | None = None, reaper: bool = True,
                 client: DockerClient | None = None, start_timeout: float = 60.0,
                 specs: ClusterSpecs | None = None) -> None:
        self.topology = topology
        self.settings = settings
        self.specs = specs or ReferenceSpecs(settings, topology.session_expired_policy)
        self.run_id = run_id or new_run_id()
        self.run_dir = run_dir
        self.start_timeout = start_timeout
        self._image_source = image_source
        self._want_reaper = reaper
        self._reaper: Reaper | None = None
        self._client = client or connect()
        self.image: NodeImage | None = None
        self.networks: DeploymentNetworks | None = None
        self.clusters: dict[str, ClusterNodes] = {}

    @property
    def nodes(self) -> list[ContainerNode]:
        return [node for cluster in self.clusters.values() for node in cluster.nodes]

    def node(self, name: str) -> ContainerNode:
        for node in self.nodes:
            if node.name == name:
                return node
        raise KeyError(f"no node {name!r} in run {self.run_id}; nodes: "
                       f"{', '.join(n.name for n in self.nodes)}")

    def up(self) -> None:
        """Start everything and return once every node serves. On any failure (or
        interrupt) everything started is removed before the error propagates."""
        if self._want_reaper and self._reaper is None:
            self._reaper = Reaper(self.run_id, self.run_dir)
        try:
            self._up()
        except BaseException:
            self.down()
            raise

    def _up(self) -> None:
        specs = self.specs
        self.image = image = specs.image(node_image(self._client, self._image_source))
        t = self.topology
        self.networks = networks = create_networks(self._client, self.run_id, t.clusters)
        for name in t.clusters:
            self.clusters[name] = ClusterNodes(
                name, self._new_nodes(name, "zookeeper", "zk", t.zookeepers),
                self._new_nodes(name, "bookie", "bookie", t.bookies),
                self._new_nodes(name, "broker", "broker", t.brokers))
        _each(lambda n: n.attach(networks.of(n.cluster)), self.nodes)

        for cluster in self.clusters.values():
            for node_id, zk in enumerate(cluster.zookeepers, start=1):
                zk.launch(specs.zookeeper(image, cluster, node_id))
        self._wait([zk for c in self.clusters.values() for zk in c.zookeepers])
        _each(specs.initialize, self.clusters.values())

        for cluster in self.clusters.values():
            for bookie in cluster.bookies:
                bookie.launch(specs.bookie(image, cluster, bookie))
        self._wait([b for c in self.clusters.values() for b in c.bookies])

        for cluster in self.clusters.values():
            for broker in cluster.brokers:
                broker.launch(specs.broker(image, cluster, broker))
        self._wait([b for c in self.clusters.values() for b in c.brokers])

    def add_node(self, cluster: str, name: str, role: str, spec: NodeSpec) -> ContainerNode:
        """Start one more node of any spec in `cluster` (a component of a third party's
        system, a client that must live inside the network) and wait until it is ready.
        It is labelled with the run like every other node, so teardown removes it."""
        assert self.image is not None and self.networks is not None, "call up() first"
        node = ContainerNode(self._client, self.image, self.run_id, cluster, name, role)
        self.clusters[cluster].others.append(node)
        node.attach(self.networks.of(cluster))
        node.launch(spec)
        node.wait_ready(self.start_timeout)
        return node

    def _new_nodes(self, cluster: str, role: str, prefix: str, count: int
                   ) -> list[ContainerNode]:
        """`count` nodes named `<cluster>-<prefix><n>`, n from 1."""
        assert self.image is not None
        return [ContainerNode(self._client, self.image, self.run_id, cluster,
                              f"{cluster}-{prefix}{n}", role) for n in range(1, count + 1)]

    def _wait(self, nodes: list[ContainerNode]) -> None:
        _each(lambda n: n.wait_ready(self.start_timeout), nodes)

    def collect_logs(self, run_dir: Path) -> list[Path]:
        """Save each node's log to `run_dir/logs/<node>.log`."""
        return save_logs(self._client, self.run_id, run_dir)

    def down(self) -> Removed:
        """Save logs (when there is a run directory) and remove every container and
        network of the run. Safe to call more than once."""
        try:
            if self.run_dir is not None:
                self.collect_logs(self.run_dir)
            return remove_run(self._client, self.run_id)
        finally:
            if self._reaper is not None:
                self._reaper.release()
                self._reaper = None

    def __enter__(self) -> DockerDeployment:
        self.up()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.down()
