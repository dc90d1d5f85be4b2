"""Our reference implementation in containers (harness/targets/docker/deployment.py): every node can
be killed, paused and partitioned (iptables in its network namespace), and our brokers'
sessions expired through their debug endpoint. Teardown removes containers, networks and
with them every rule, and the deployment's reaper covers a harness killed outright."""

from __future__ import annotations

from pathlib import Path

from harness.backends import BACKENDS
from harness.target import Capability, NetworkControl, Node, NodeControl, Role, TargetCluster
from harness.targets.docker.containers import ContainerNode
from harness.targets.docker.deployment import ClusterNodes, DockerDeployment
from harness.targets.docker.iptables import IptablesNetwork
from harness.targets.docker.node_specs import NodeSettings
from harness.targets.lookup import DeployedLookup
from harness.targets.run_auth import RunAuth
from harness.targets.topology_deployment import TopologyDeployment
from harness.topology import Topology

CAPABILITIES = BACKENDS["docker"].capabilities


class DockerTarget(TopologyDeployment):
    """A `Deployment` of containers."""

    def __init__(self, topology: Topology, mutants: tuple[str, ...], run_dir: Path,
                 lookup_service: bool = False, auth: RunAuth | None = None) -> None:
        super().__init__(topology, DeployedLookup(lookup_service, run_dir, auth, mutants))
        # Connecting here raises EngineUnavailable (exit 4) before anything starts.
        self._deployment = DockerDeployment(
            topology, settings=NodeSettings(
                session_timeout_ms=topology.session_timeout_ms, mutants=mutants, auth=auth,
                replication_keepalive_s=topology.replication_keepalive_s,
                snapshot_timeout_s=topology.snapshot_timeout_s,
                controller_step_pause_ms=topology.controller_step_pause_ms), run_dir=run_dir)
        self._network: IptablesNetwork | None = None
        self.where = f"containers labelled starquake={self._deployment.run_id}"

    def start(self) -> None:
        self._deployment.up()
        self._network = IptablesNetwork(self._deployment.nodes)
        self._lookup.start(self.clusters[0].metadata_store)

    def stop(self) -> None:
        try:
            self._lookup.stop()
        finally:
            self._deployment.down()

    @property
    def clusters(self) -> tuple[TargetCluster, ...]:
        return tuple(cluster_of(nodes) for nodes in self._deployment.clusters.values())

    def control(self, node: str) -> NodeControl:
        return self._deployment.node(node)

    @property
    def network(self) -> NetworkControl | None:
        return self._network


def cluster_of(nodes: ClusterNodes,
               capabilities: frozenset[Capability] = CAPABILITIES) -> TargetCluster:
    """One cluster's ZooKeeper, bookie and broker nodes as a Target shows them, each with
    `capabilities` (nodes added for other jobs, such as a lookup service, are not the
    cluster's)."""
    roles: tuple[tuple[Role, list[ContainerNode]], ...] = (
        ("zookeeper", nodes.zookeepers), ("bookie", nodes.bookies), ("broker", nodes.brokers))
    return TargetCluster(nodes.name, tuple(nodes.service_urls), tuple(nodes.admin_urls),
                         nodes.zk_connect_string,
                         tuple(Node(node.name, role, nodes.name, node.ip, capabilities)
                               for role, members in roles for node in members))
