"""The real Apache Pulsar as a Deployment: the `apache-pulsar` backend (harness/backends.py).

The topology's clusters (several share the first one's ZooKeeper as configuration store,
for geo-replication) of ZooKeeper nodes, bookies and brokers, each a node of the
Docker backend's machinery (two containers, the run's labels, iptables partitions in its
own namespace, logs saved into the run directory, the reaper), running the official
distribution that `starquake pulsar fetch` keeps in its cache (fetched here when the cache
lacks it). Every node can be killed (SIGKILL of its JVM, through the container's init),
paused (the cgroup freezer: SIGSTOP's effect) and partitioned. Pulsar publishes no
ZooKeeper session of its brokers, so `expire-session` falls back to cutting a broker from
ZooKeeper past its session timeout.
"""

from __future__ import annotations

from pathlib import Path

from harness.backends import BACKENDS
from harness.target import NetworkControl, NodeControl, TargetCluster
from harness.targets.apache_pulsar.distribution import Distribution, fetch
from harness.targets.apache_pulsar.node_specs import LEDGER_COPIES, PulsarSettings, PulsarSpecs
from harness.targets.docker.deployment import DockerDeployment
from harness.targets.docker.described import DescribedPromises
from harness.targets.docker.images import ImageSource
from harness.targets.docker.iptables import IptablesNetwork
from harness.targets.docker.target import cluster_of
from harness.targets.lookup import DeployedLookup
from harness.targets.run_auth import RunAuth
from harness.targets.topology_deployment import TopologyDeployment
from harness.topology import REFERENCE_BROKER_SETTINGS, Topology
from history.errors import BadInput

BACKEND = "apache-pulsar"
PULSAR_SNAPSHOT_TIMEOUT_S = 30.0
"""`replicatedSubscriptionsSnapshotTimeoutSeconds`, the distribution's default."""
START_TIMEOUT_S = 300.0
"""How long one tier may take to serve: seven JVMs starting on two cores take minutes."""


def _refuse_what_pulsar_lacks(topology: Topology, mutants: tuple[str, ...],
                              lookup_service: bool, auth: RunAuth | None) -> None:
    """What a scenario may ask of our reference implementation but not of this backend."""
    where = f"topology.backend = {BACKEND!r}"
    if mutants:
        raise BadInput(f"{where}: mutants switch bugs of our reference implementation; "
                       "Apache Pulsar has none to switch")
    if lookup_service:
        raise BadInput(f"{where}: the lookup service is our reference implementation's; "
                       "Apache Pulsar has none")
    if auth is not None:
        raise BadInput(f"{where}: topology.auth = \"token\" is not set up for Apache Pulsar "
                       "yet")
    for name in REFERENCE_BROKER_SETTINGS:
        default = getattr(Topology(), name)
        if getattr(topology, name) != default:
            raise BadInput(f"{where}: topology.{name} is read by our reference brokers "
                           f"only; Apache Pulsar runs with its own ({default})")


def pulsar_deployment(topology: Topology, distribution: Distribution | None = None, *,
                      mutants: tuple[str, ...] = (), lookup_service: bool = False,
                      run_dir: Path | None = None,
                      run_id: str | None = None, reaper: bool = True,
                      image_source: ImageSource = "import") -> DockerDeployment:
    """The topology's one cluster of Apache Pulsar as a Docker deployment, not started:
    a run's (`ApachePulsarTarget`) and `starquake cluster up`'s. Without `distribution`,
    the version the lock file records, fetched when the cache lacks it. Raises
    DistributionUnavailable or EngineUnavailable before anything starts."""
    _refuse_what_pulsar_lacks(topology, mutants, lookup_service, None)
    specs = PulsarSpecs(distribution or fetch(), pulsar_settings(topology))
    deployment = DockerDeployment(
        topology, run_dir=run_dir, run_id=run_id, reaper=reaper, image_source=image_source,
        start_timeout=START_TIMEOUT_S, specs=specs)
    specs.clusters = deployment.clusters
    return deployment


def pulsar_settings(topology: Topology) -> PulsarSettings:
    """What the topology sets on every node. Each ledger entry goes to `LEDGER_COPIES`
    bookies, or to the one bookie a cluster of one has (as Pulsar's standalone does):
    asked for two there, the brokers could create no ledger, and no topic would open
    (`Not enough non-faulty bookies available`)."""
    copies = min(LEDGER_COPIES, topology.bookies)
    return PulsarSettings(session_timeout_ms=topology.session_timeout_ms,
                          session_expired_policy=topology.session_expired_policy,
                          ensemble=copies, write_quorum=copies, ack_quorum=copies)


def described_promises(topology: Topology) -> DescribedPromises:
    """What a target file says of a Pulsar cluster this backend started: the brokers'
    session timeout; the snapshot timeout Pulsar defaults to (30 s); no shutdown bound for
    a broker cut from ZooKeeper, which Pulsar does not document."""
    return DescribedPromises(topology.session_timeout_ms / 1000, PULSAR_SNAPSHOT_TIMEOUT_S,
                             None)


class ApachePulsarTarget(TopologyDeployment):
    """Apache Pulsar in containers."""

    def __init__(self, topology: Topology, mutants: tuple[str, ...], run_dir: Path,
                 lookup_service: bool = False, auth: RunAuth | None = None) -> None:
        _refuse_what_pulsar_lacks(topology, mutants, lookup_service, auth)
        super().__init__(topology, DeployedLookup(False, run_dir, None, ()))
        distribution = fetch()  # the version the lock file records
        self.version = distribution.version
        self._deployment = pulsar_deployment(topology, distribution, run_dir=run_dir)
        self._network: IptablesNetwork | None = None
        self.where = (f"Apache Pulsar {self.version} in containers labelled "
                      f"starquake={self._deployment.run_id}")

    def start(self) -> None:
        self._deployment.up()
        self._network = IptablesNetwork(self._deployment.nodes)

    def stop(self) -> None:
        self._deployment.down()

    @property
    def clusters(self) -> tuple[TargetCluster, ...]:
        capabilities = BACKENDS[BACKEND].capabilities
        return tuple(cluster_of(nodes, capabilities)
                     for nodes in self._deployment.clusters.values())

    @property
    def metadata_loss_shutdown_s(self) -> float | None:
        """None: Pulsar documents no bound on how long a broker cut from ZooKeeper stays
        up (under `reconnect` it keeps serving while it tries for a new session)."""
        return None

    def control(self, node: str) -> NodeControl:
        return self._deployment.node(node)

    @property
    def network(self) -> NetworkControl | None:
        return self._network
