"""The two places a run's cluster can live, behind one interface: containers (docker) or
local processes (local).

Both name nodes alike (`<cluster>-zk<n>`, `<cluster>-bookie<n>`, `<cluster>-broker<n>`,
from 1), so a scenario's fault targets and a seed's schedule mean the same nodes on
either. Both save every node's log into the run directory's `logs/` when they stop.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from harness.local_cluster import ClusterSettings, LocalCluster
from nemesis.partition import Partitioner
from nemesis.process import ProcessNode
from nemesis.runner import FaultTargets
from nemesis.schedule import node_names
from scenarios.format import Scenario

if TYPE_CHECKING:  # the docker SDK is imported only by runs that use it
    from harness.docker_cluster import ClusterNodes


class ClusterBackend(FaultTargets, Protocol):
    cluster: str
    where: str
    """Where its nodes live, for people: a directory, or the containers' label."""

    def start(self) -> None:
        """Start every node; return once every broker serves."""

    def stop(self) -> None:
        """Stop and remove everything, saving each node's log into `<run dir>/logs/`.
        Safe after a failed or partial start, and more than once."""

    @property
    def service_url(self) -> str:
        """Every broker, as one multi-host URL the official client accepts."""


def multi_host_url(urls: list[str]) -> str:
    """`pulsar://a:1`, `pulsar://b:2` -> `pulsar://a:1,b:2`: the client tries each host, so
    a lookup still succeeds while one broker is down."""
    return "pulsar://" + ",".join(url.removeprefix("pulsar://") for url in urls)


class _NamedNode:
    """A local node under its scenario name; its controls (kill, start, pause, resume)
    are the node's own."""

    def __init__(self, name: str, node: ProcessNode) -> None:
        self.name = name
        self._node = node

    def __getattr__(self, control: str) -> Any:
        return getattr(self._node, control)


class LocalBackend:
    """One cluster as local processes on loopback (harness/local_cluster.py). Data lives in
    a temporary directory removed on stop; the logs are copied into the run directory."""

    def __init__(self, scenario: Scenario, run_dir: Path) -> None:
        t = scenario.topology
        self.cluster = t.clusters[0]
        self._run_dir = run_dir
        self._base = Path(tempfile.mkdtemp(prefix="starquake-run-"))
        self.where = f"processes with data in {self._base}"
        self._local = LocalCluster(self._base, ClusterSettings(
            name=self.cluster, brokers=t.brokers, bookies=t.bookies, zookeepers=t.zookeepers,
            session_timeout_ms=t.session_timeout_ms,
            session_expired_policy=t.session_expired_policy, mutants=scenario.mutants))
        names = node_names(scenario)
        self._logs: dict[str, Path] = {}
        self._nodes: dict[str, _NamedNode] = {}
        for name, zk in zip(names["zookeeper"], self._local.zookeeper.nodes, strict=True):
            self._nodes[name], self._logs[name] = _NamedNode(name, zk), zk.log_path
        for role, nodes in (("bookie", self._local.bookies), ("broker", self._local.brokers)):
            for name, node in zip(names[role], nodes, strict=True):
                self._nodes[name], self._logs[name] = _NamedNode(name, node), node.process.log_path
        self._brokers = dict(zip(names["broker"], self._local.brokers, strict=True))
        self._stopped = False

    def start(self) -> None:
        self._local.start()

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        try:
            self._local.stop()
        finally:
            logs = self._run_dir / "logs"
            logs.mkdir(parents=True, exist_ok=True)
            for name, path in self._logs.items():
                if path.is_file():
                    shutil.copyfile(path, logs / f"{name}.log")
            shutil.rmtree(self._base, ignore_errors=True)

    @property
    def service_url(self) -> str:
        return multi_host_url(self._local.service_urls)

    def process_node(self, name: str) -> ProcessNode:
        return self._nodes[name]

    @property
    def partitioner(self) -> Partitioner | None:
        return None

    @property
    def broker_admin_urls(self) -> dict[str, str]:
        return {name: broker.admin_url for name, broker in self._brokers.items()}

    def broker_at(self, url: str) -> str | None:
        try:
            broker = self._local.broker_at(url)
        except KeyError:
            return None
        return next(name for name, node in self._brokers.items() if node is broker)

    @property
    def zookeeper_hosts(self) -> str:
        return self._local.zookeeper.connect_string


class DockerBackend:
    """The scenario's topology in containers (harness/docker_cluster.py); partitions by
    iptables in the nodes' namespaces. Teardown removes containers, networks and with them
    every rule, and the deployment's reaper covers a harness killed outright."""

    def __init__(self, scenario: Scenario, run_dir: Path) -> None:
        from harness.docker_cluster import DockerDeployment
        from harness.node_specs import NodeSettings

        t = scenario.topology
        self.cluster = t.clusters[0]
        # Connecting here raises EngineUnavailable (exit 4) before anything starts.
        self._deployment = DockerDeployment(
            t, settings=NodeSettings(session_timeout_ms=t.session_timeout_ms,
                                     mutants=scenario.mutants), run_dir=run_dir)
        self._partitioner: Partitioner | None = None
        self.where = f"containers labelled starquake={self._deployment.run_id}"

    def start(self) -> None:
        self._deployment.up()
        self._partitioner = Partitioner(self._deployment.nodes)

    def stop(self) -> None:
        self._deployment.down()

    @property
    def _nodes(self) -> ClusterNodes:
        return self._deployment.clusters[self.cluster]

    @property
    def service_url(self) -> str:
        return multi_host_url(self._nodes.service_urls)

    def process_node(self, name: str) -> ProcessNode:
        return self._deployment.node(name)

    @property
    def partitioner(self) -> Partitioner | None:
        return self._partitioner

    @property
    def broker_admin_urls(self) -> dict[str, str]:
        return {b.name: url for b, url in zip(self._nodes.brokers, self._nodes.admin_urls,
                                               strict=True)}

    def broker_at(self, url: str) -> str | None:
        url = url.rstrip("/")
        for broker, service, admin in zip(self._nodes.brokers, self._nodes.service_urls,
                                          self._nodes.admin_urls, strict=True):
            if url in (service, admin):
                return broker.name
        return None

    @property
    def zookeeper_hosts(self) -> str:
        return self._nodes.zk_connect_string


def make_backend(scenario: Scenario, run_dir: Path) -> ClusterBackend:
    """The backend the (resolved) scenario's `topology.backend` names."""
    if scenario.topology.backend == "local":
        return LocalBackend(scenario, run_dir)
    return DockerBackend(scenario, run_dir)
