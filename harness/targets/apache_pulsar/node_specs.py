"""Apache Pulsar's ZooKeeper, bookies and brokers as node specs of the Docker backend's
deployment (harness/targets/docker/deployment.py), and the cluster metadata set up between
ZooKeeper and the bookies.

Each node runs the distribution's own launcher, `bin/pulsar zookeeper|bookie|broker`,
from the cached distribution mounted read-only at the same path in every container, with
the host's Java 17 (the node image mounts `/usr`). Its configuration is the distribution's
`conf/` file with our settings applied (`config.py`), written into the container; logs go
to the console, so the engine keeps them across restarts and teardown saves them into the
run directory. Every JVM gets an explicit heap and direct-memory limit: seven of them share
a 2-core machine with the harness and the checkers.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.targets.apache_pulsar.config import rendered
from harness.targets.apache_pulsar.distribution import Distribution
from harness.targets.docker.containers import ContainerNode, NodeSpec
from harness.targets.docker.deployment import ClusterNodes
from harness.targets.docker.images import NodeImage
from harness.targets.docker.node_specs import (
    BOOKIE_PORT,
    BROKER_ADMIN_PORT,
    BROKER_PORT,
    ZOOKEEPER_CLIENT_PORT,
    ZOOKEEPER_ELECTION_PORT,
    ZOOKEEPER_PEER_PORT,
)
from harness.waits import HttpStatus, TcpPort, ZooKeeperServing
from history.errors import EnvironmentProblem

log = logging.getLogger(__name__)

CONF_DIR = "/data/conf"
LOG_DIR = "/data/logs"
ZOOKEEPER_DATA = "/data/zookeeper"
BOOKIE_DATA = "/data/bookkeeper"
BROKER_READY_PATH = "/admin/v2/brokers/ready"
"""Answers 200 once the broker has started its services; the health check
(`/brokers/health`) writes and reads a topic, too heavy to poll while seven JVMs start."""

HEAP = {
    "zookeeper": "-Xms64m -Xmx128m",
    "bookie": "-Xms128m -Xmx256m -XX:MaxDirectMemorySize=256m",
    "broker": "-Xms256m -Xmx512m -XX:MaxDirectMemorySize=256m",
    "tool": "-Xms32m -Xmx128m",
}
"""`PULSAR_MEM` (`BOOKIE_MEM` for bookies) by role: the distribution's defaults (2 GiB heaps,
up to 4 GiB of direct memory) would ask for some 20 GiB for seven JVMs."""
GC = "-XX:+UseG1GC -XX:+PerfDisableSharedMem"
"""`PULSAR_GC`: the distribution's default, ZGC with `AlwaysPreTouch`, maps and touches
the whole heap up front, memory and start-up time this small a machine has not to spare."""


class MetadataSetupFailed(EnvironmentProblem):
    """`bin/pulsar initialize-cluster-metadata` did not succeed."""


LEDGER_COPIES = 2
"""How many bookies a ledger entry is written to and waits for (ensemble, write and ack
quorum) where a cluster has that many: a frozen or killed bookie then stops writes until
the client replaces it in the ensemble, or, with no spare bookie, until it returns."""


@dataclass(frozen=True)
class PulsarSettings:
    """What a run sets on every Pulsar node; the rest keeps the distribution's defaults."""

    session_timeout_ms: int
    """`metadataStoreSessionTimeoutMillis`, the brokers' ZooKeeper session timeout, and the
    bookies' (`zkTimeout`, 30 s by default). A killed bookie started again within its old
    session finds its registration still held and refuses to register
    (`LockBusyException: Resource at /ledgers/available/... is already locked`), so the
    bookies' session is the scenario's too: a fault that outlasts it is survivable."""
    session_expired_policy: str
    """`zookeeperSessionExpiredPolicy`: `reconnect` (Pulsar's default) or `shutdown`."""
    ensemble: int = LEDGER_COPIES
    write_quorum: int = LEDGER_COPIES
    ack_quorum: int = LEDGER_COPIES
    bookie_autorecovery: bool = False
    """`autoRecoveryDaemonEnabled`, the distribution's `true`: AutoRecovery (auditor and
    replication workers) inside every bookie. Off: a bookie frozen past its session comes
    back with its AutoRecovery's session expired, and BookKeeper then shuts the whole
    bookie down (its `AutoRecoveryDeathWatcher`), one bookie fault becoming a permanent
    loss; nothing here would restart it. Re-replication is not what the scenarios judge,
    and a separate AutoRecovery process would be one JVM more (docs/apache-pulsar.md)."""
    mark_delete_rate_limit: float = 0.0
    """`managedLedgerDefaultMarkDeleteRateLimit`: 0, every acknowledgement's cursor update
    is written to storage at once. Pulsar's default (1 a second, the rest flushed every
    `managedLedgerCursorPositionFlushSeconds`, 60) keeps up to a minute of
    acknowledgements in the owner's memory only, which a crash loses: at-least-once, as
    documented, and the redeliveries would read as `duplicate` (docs/apache-pulsar.md)."""


def _broker_urls(cluster: ClusterNodes, scheme: str, port: int) -> str:
    """Every broker of the cluster in one URL, `scheme://ip1:port,ip2:port`."""
    return f"{scheme}://" + ",".join(f"{b.advertised_ip}:{port}" for b in cluster.brokers)


class PulsarSpecs:
    """The `ClusterSpecs` of Apache Pulsar: one cluster per ZooKeeper ensemble, no chroot,
    and one configuration store for all of them, the first cluster's ZooKeeper (Pulsar's
    geo-replication with a shared configuration store: tenants, namespaces and the
    clusters' URLs are the same everywhere)."""

    def __init__(self, distribution: Distribution, settings: PulsarSettings) -> None:
        self.distribution = distribution
        self.settings = settings
        self.clusters: Mapping[str, ClusterNodes] = {}
        """The deployment's clusters, the first holding the configuration store: its
        `clusters`, which it fills as it starts them (`pulsar_deployment` binds them)."""
        self._initializing = threading.Lock()

    def configuration_store(self) -> str:
        """The first cluster's ZooKeeper at the addresses every cluster reaches (the WAN's
        when there are several clusters), as Pulsar's `zk:` URL."""
        first = next(iter(self.clusters.values()))
        return "zk:" + ",".join(f"{zk.advertised_ip}:{ZOOKEEPER_CLIENT_PORT}"
                                for zk in first.zookeepers)

    @property
    def home(self) -> Path:
        return self.distribution.home

    def image(self, base: NodeImage) -> NodeImage:
        """The node image with the distribution mounted, and `JAVA_HOME` the host's Java
        (the one the import path mounts: bin/pulsar checks it is 17 or newer)."""
        if base.source != "import":
            raise EnvironmentProblem("the apache-pulsar backend mounts this machine's Java "
                                     "and the cached distribution: it needs the imported node "
                                     "image (docs/containers.md)")
        java_home = str(Path(base.java).parent.parent)
        return dataclasses.replace(
            base, read_only_mounts=(*base.read_only_mounts, str(self.home)),
            environment={**base.environment, "JAVA_HOME": java_home,
                         "PULSAR_LOG_DIR": LOG_DIR, "PULSAR_GC": GC})

    def _spec(self, role: str, conf_variable: str, conf_name: str, conf: str,
              wait: HttpStatus | TcpPort | ZooKeeperServing, ports: Mapping[str, int],
              files: Mapping[str, str] | None = None) -> NodeSpec:
        memory = "BOOKIE_MEM" if role == "bookie" else "PULSAR_MEM"
        path = f"{CONF_DIR}/{conf_name}"
        return NodeSpec(command=(str(self.distribution.launcher), role), wait=wait,
                        ports=ports, files={path: conf, **(files or {})},
                        environment={conf_variable: path, memory: HEAP[role]})

    def zookeeper(self, image: NodeImage, cluster: ClusterNodes, node_id: int) -> NodeSpec:
        servers = {f"server.{n}": f"{zk.ip}:{ZOOKEEPER_PEER_PORT}:{ZOOKEEPER_ELECTION_PORT}"
                   for n, zk in enumerate(cluster.zookeepers, start=1)}
        conf = rendered(self.home, "zookeeper.conf", {
            "dataDir": ZOOKEEPER_DATA, "clientPort": str(ZOOKEEPER_CLIENT_PORT),
            "admin.enableServer": "false",
            **(servers if len(cluster.zookeepers) > 1 else {})})
        return self._spec("zookeeper", "PULSAR_ZK_CONF", "zookeeper.conf", conf,
                          ZooKeeperServing(ZOOKEEPER_CLIENT_PORT),
                          {"client": ZOOKEEPER_CLIENT_PORT},
                          {f"{ZOOKEEPER_DATA}/myid": f"{node_id}\n"})

    def initialize(self, cluster: ClusterNodes) -> None:
        """Pulsar's own `PulsarClusterMetadataSetup` (`bin/pulsar
        initialize-cluster-metadata`), run in the first ZooKeeper node's container: the
        cluster and its brokers' URLs in the configuration store, the `public/default`
        namespace when the store lacks it, and BookKeeper's metadata in the cluster's own
        ZooKeeper."""
        argv = [str(self.distribution.launcher), "initialize-cluster-metadata",
                "--cluster", cluster.name, "--metadata-store", f"zk:{cluster.zk_connect_string}",
                "--configuration-metadata-store", self.configuration_store(),
                "--web-service-url", _broker_urls(cluster, "http", BROKER_ADMIN_PORT),
                "--broker-service-url", _broker_urls(cluster, "pulsar", BROKER_PORT)]
        node = cluster.zookeepers[0]
        with self._initializing:  # one at a time: each writes `public` into the shared store
            result = node.process.exec_run(argv, environment={"PULSAR_MEM": HEAP["tool"]})
        output = result.output.decode(errors="replace")
        if result.exit_code != 0:
            tail = "\n".join(output.splitlines()[-20:])
            raise MetadataSetupFailed(f"{node.name}: initialize-cluster-metadata for cluster "
                                      f"{cluster.name} exited {result.exit_code}:\n{tail}")
        log.info("cluster %s: metadata initialised", cluster.name)

    def bookie(self, image: NodeImage, cluster: ClusterNodes, node: ContainerNode) -> NodeSpec:
        zk = cluster.zk_connect_string
        conf = rendered(self.home, "bookkeeper.conf", {
            "bookiePort": str(BOOKIE_PORT), "advertisedAddress": node.advertised_ip,
            "metadataServiceUri": f"metadata-store:zk:{zk}", "zkServers": zk,
            "journalDirectory": f"{BOOKIE_DATA}/journal",
            "ledgerDirectories": f"{BOOKIE_DATA}/ledgers",
            "zkTimeout": str(self.settings.session_timeout_ms),
            "autoRecoveryDaemonEnabled": str(self.settings.bookie_autorecovery).lower()})
        return self._spec("bookie", "PULSAR_BOOKKEEPER_CONF", "bookkeeper.conf", conf,
                          TcpPort(BOOKIE_PORT, host=node.advertised_ip),
                          {"bookie": BOOKIE_PORT})

    def broker(self, image: NodeImage, cluster: ClusterNodes, node: ContainerNode) -> NodeSpec:
        s = self.settings
        conf = rendered(self.home, "broker.conf", {
            "clusterName": cluster.name, "metadataStoreUrl": f"zk:{cluster.zk_connect_string}",
            "configurationMetadataStoreUrl": self.configuration_store(),
            "advertisedAddress": node.advertised_ip, "bindAddress": "0.0.0.0",
            "brokerServicePort": str(BROKER_PORT), "webServicePort": str(BROKER_ADMIN_PORT),
            "metadataStoreSessionTimeoutMillis": str(s.session_timeout_ms),
            "zookeeperSessionExpiredPolicy": s.session_expired_policy,
            "managedLedgerDefaultEnsembleSize": str(s.ensemble),
            "managedLedgerDefaultWriteQuorum": str(s.write_quorum),
            "managedLedgerDefaultAckQuorum": str(s.ack_quorum),
            "managedLedgerDefaultMarkDeleteRateLimit": str(s.mark_delete_rate_limit)})
        # Where it advertises, it must answer.
        return self._spec("broker", "PULSAR_BROKER_CONF", "broker.conf", conf,
                          HttpStatus(BROKER_ADMIN_PORT, BROKER_READY_PATH,
                                     host=node.advertised_ip),
                          {"service": BROKER_PORT, "admin": BROKER_ADMIN_PORT})
