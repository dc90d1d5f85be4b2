"""Our reference implementation as local processes on loopback: one `LocalCluster` per
cluster of the topology, started side by side. Data lives in a temporary directory removed
on stop; the logs are copied into the run directory. Nodes can be killed and paused (and
their sessions expired through our brokers' debug endpoint), not partitioned: they share
the loopback interface."""

from __future__ import annotations

import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Protocol

from harness.backends import BACKENDS
from harness.target import ROLES, NetworkControl, Node, NodeControl, Role, TargetCluster
from harness.targets.local.cluster import BookieNode, BrokerNode, ClusterSettings, LocalCluster
from harness.targets.lookup import DeployedLookup
from harness.targets.run_auth import DIGEST_FILE, RunAuth
from harness.targets.topology_deployment import TopologyDeployment
from harness.topology import Topology

CAPABILITIES = BACKENDS["local"].capabilities


class _Controls(Protocol):
    def kill(self) -> None: ...

    def start(self) -> None: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...


class _NamedNode:
    """A local process under its topology name (its own name is the process's)."""

    def __init__(self, name: str, node: _Controls) -> None:
        self.name = name
        self._node = node

    def kill(self) -> None:
        self._node.kill()

    def start(self) -> None:
        self._node.start()

    def pause(self) -> None:
        self._node.pause()

    def resume(self) -> None:
        self._node.resume()


def _where(base: Path, clusters: dict[str, LocalCluster], auth: RunAuth | None) -> str:
    """Where the run's processes keep their data, and what `starquake zk` needs to read
    its ZooKeeper: each cluster's connect string and, with authentication, the digest
    file."""
    zookeepers = ", ".join(f"{name} {local.zk_connect_string}"
                           for name, local in clusters.items())
    closed = auth is not None and auth.metadata_digest
    credentials = f", credentials {base / DIGEST_FILE}" if closed else ""
    return f"processes with data in {base}; ZooKeeper {zookeepers}{credentials}"


class LocalTarget(TopologyDeployment):
    """A `Deployment` of local processes."""

    def __init__(self, topology: Topology, mutants: tuple[str, ...], run_dir: Path,
                 lookup_service: bool = False, auth: RunAuth | None = None) -> None:
        super().__init__(topology, DeployedLookup(lookup_service, run_dir, auth, mutants))
        self._run_dir = run_dir
        self._base = Path(tempfile.mkdtemp(prefix="starquake-run-"))
        broker_args: tuple[str, ...] = (
            "--replication-keepalive-seconds", str(topology.replication_keepalive_s),
            "--replicated-subscriptions-snapshot-timeout-seconds",
            str(topology.snapshot_timeout_s),
            "--controller-step-pause-ms", str(topology.controller_step_pause_ms))
        bookie_args: tuple[str, ...] = ()
        if auth is not None:
            metadata_args = auth.local_metadata_args(self._base)
            bookie_args = (*auth.local_bookie_args(self._base), *metadata_args)
            broker_args += (*auth.local_broker_args(self._base), *metadata_args)
        self._locals = {
            name: LocalCluster(self._base / name, ClusterSettings(
                name=name, brokers=topology.brokers, bookies=topology.bookies,
                zookeepers=topology.zookeepers, session_timeout_ms=topology.session_timeout_ms,
                session_expired_policy=topology.session_expired_policy, mutants=mutants,
                broker_args=broker_args, bookie_args=bookie_args))
            for name in topology.clusters}
        self.where = _where(self._base, self._locals, auth)
        self._controls: dict[str, NodeControl] = {}
        self._logs: dict[str, Path] = {}
        for cluster, local in self._locals.items():
            for name, zk in zip(topology.node_names(cluster, "zookeeper"), local.zookeeper.nodes,
                                strict=True):
                self._controls[name], self._logs[name] = _NamedNode(name, zk), zk.log_path
            processes: tuple[tuple[Role, list[BookieNode] | list[BrokerNode]], ...] = (
                ("bookie", local.bookies), ("broker", local.brokers))
            for role, nodes in processes:
                for name, node in zip(topology.node_names(cluster, role), nodes, strict=True):
                    self._controls[name] = _NamedNode(name, node)
                    self._logs[name] = node.process.log_path
        self._stopped = False

    @property
    def clusters(self) -> tuple[TargetCluster, ...]:
        return tuple(
            TargetCluster(name, tuple(local.service_urls), tuple(local.admin_urls),
                          local.zookeeper.connect_string,
                          tuple(Node(node, role, name, "127.0.0.1", CAPABILITIES)
                                for role in ROLES
                                for node in self._topology.node_names(name, role)))
            for name, local in self._locals.items())

    def control(self, node: str) -> NodeControl:
        return self._controls[node]

    @property
    def network(self) -> NetworkControl | None:
        return None

    def start(self) -> None:
        self._link_logs()
        with ThreadPoolExecutor(len(self._locals)) as pool:
            for started in [pool.submit(local.start) for local in self._locals.values()]:
                started.result()
        self._lookup.start(self.clusters[0].metadata_store)

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        try:
            self._lookup.stop()
            for local in self._locals.values():
                local.stop()
        finally:
            for name, path in self._logs.items():
                saved = self._saved_log(name)
                saved.unlink(missing_ok=True)
                if path.is_file():
                    shutil.copyfile(path, saved)
            shutil.rmtree(self._base, ignore_errors=True)

    def _saved_log(self, name: str) -> Path:
        return self._run_dir / "logs" / f"{name}.log"

    def _link_logs(self) -> None:
        """Name every node's log in the run directory from the start, as a link to where the
        node writes it: a harness killed outright (SIGKILL) cannot copy the logs, and its
        data directory, which nothing removes then, keeps them. `stop` replaces each link
        with a copy."""
        for name, path in self._logs.items():
            saved = self._saved_log(name)
            saved.parent.mkdir(parents=True, exist_ok=True)
            saved.unlink(missing_ok=True)
            saved.symlink_to(path)
