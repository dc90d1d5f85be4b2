"""The two places a run's cluster can live, behind one interface: containers (docker) or
local processes (local).

Both name nodes alike (`<cluster>-zk<n>`, `<cluster>-bookie<n>`, `<cluster>-broker<n>`,
from 1), so a scenario's fault targets and a seed's schedule mean the same nodes on
either. Both save every node's log into the run directory's `logs/` when they stop.
"""

from __future__ import annotations

import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from harness.local_cluster import BrokerNode, ClusterSettings, LocalCluster
from harness.workloads.base import ClusterAccess, multi_host_url
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
        """Every broker of the first cluster, as one multi-host URL the official client
        accepts."""

    @property
    def clusters(self) -> tuple[ClusterAccess, ...]:
        """Every cluster of the topology, in the scenario's order."""


class _NamedNode:
    """A local node under its scenario name; its controls (kill, start, pause, resume)
    are the node's own."""

    def __init__(self, name: str, node: ProcessNode) -> None:
        self.name = name
        self._node = node

    def __getattr__(self, control: str) -> Any:
        return getattr(self._node, control)


class LocalBackend:
    """The topology's clusters as local processes on loopback (harness/local_cluster.py),
    one `LocalCluster` per cluster, started side by side. Data lives in a temporary
    directory removed on stop; the logs are copied into the run directory."""

    def __init__(self, scenario: Scenario, run_dir: Path) -> None:
        t = scenario.topology
        self.cluster = t.clusters[0]
        self._run_dir = run_dir
        self._base = Path(tempfile.mkdtemp(prefix="starquake-run-"))
        self.where = f"processes with data in {self._base}"
        self._locals = {
            name: LocalCluster(self._base / name, ClusterSettings(
                name=name, brokers=t.brokers, bookies=t.bookies, zookeepers=t.zookeepers,
                session_timeout_ms=t.session_timeout_ms,
                session_expired_policy=t.session_expired_policy, mutants=scenario.mutants))
            for name in t.clusters}
        self._local = self._locals[self.cluster]
        self._logs: dict[str, Path] = {}
        self._nodes: dict[str, _NamedNode] = {}
        self._brokers: dict[str, BrokerNode] = {}
        for cluster, local in self._locals.items():
            names = node_names(scenario, cluster)
            for name, zk in zip(names["zookeeper"], local.zookeeper.nodes, strict=True):
                self._nodes[name], self._logs[name] = _NamedNode(name, zk), zk.log_path
            for role, nodes in (("bookie", local.bookies), ("broker", local.brokers)):
                for name, node in zip(names[role], nodes, strict=True):
                    self._nodes[name] = _NamedNode(name, node)
                    self._logs[name] = node.process.log_path
            self._brokers.update(zip(names["broker"], local.brokers, strict=True))
        self._stopped = False

    def start(self) -> None:
        with ThreadPoolExecutor(len(self._locals)) as pool:
            for started in [pool.submit(local.start) for local in self._locals.values()]:
                started.result()

    @property
    def clusters(self) -> tuple[ClusterAccess, ...]:
        return tuple(ClusterAccess(name, tuple(local.service_urls), tuple(local.admin_urls),
                                   local.zookeeper.connect_string)
                     for name, local in self._locals.items())

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        try:
            for local in self._locals.values():
                local.stop()
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
        url = url.rstrip("/")
        return next((name for name, node in self._brokers.items()
                     if url in (node.service_url, node.admin_url)), None)

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

    @property
    def clusters(self) -> tuple[ClusterAccess, ...]:
        return tuple(ClusterAccess(name, tuple(nodes.service_urls), tuple(nodes.admin_urls),
                                   nodes.zk_connect_string)
                     for name, nodes in self._deployment.clusters.items())

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
