"""The specs of ZooKeeper, bookie and broker containers: command lines, files, health.

Every node has an address of its own, so every node listens on its role's usual port; the
command lines are those of `harness/targets/local/cluster.py`, with container addresses.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from harness.targets.docker.containers import NodeSpec
from harness.targets.docker.images import NodeImage
from harness.targets.local.zookeeper import CLASSPATH, JVM_FLAGS, MAIN_CLASS
from harness.targets.local.zookeeper_config import ServerAddress, ZooKeeperSettings, render_zoo_cfg
from harness.targets.run_auth import DIGEST_FILE, RunAuth
from harness.waits import HttpStatus, TcpPort, ZooKeeperServing
from wire.keep_alive import KEEPALIVE_S

ZOOKEEPER_CLIENT_PORT = 2181
ZOOKEEPER_PEER_PORT = 2888
ZOOKEEPER_ELECTION_PORT = 3888
BOOKIE_PORT = 3181
BROKER_PORT = 6650
BROKER_ADMIN_PORT = 8080
BROKER_HEALTH_PATH = "/admin/v2/brokers/health"
ZOOKEEPER_DIR = "/data/zookeeper"
SECURITY_DIR = "/data/security"


@dataclass(frozen=True)
class NodeSettings:
    """Settings every node of a deployment shares."""

    session_timeout_ms: int = 4000
    """The brokers' ZooKeeper session timeout: short, so faults act within seconds."""
    mutants: tuple[str, ...] = ()
    replication_keepalive_s: float = KEEPALIVE_S
    """The brokers' replicator keep-alive: Pulsar's 30 s by default, so a WAN cut that
    drops packets leaves replicators looking connected for a minute. Tests about what
    happens once a replicator knows it is cut shorten it."""
    snapshot_timeout_s: float = 30.0
    """The brokers' replicated-subscription snapshot timeout: Pulsar's 30 s."""
    controller_step_pause_ms: int = 0
    """`Topology.controller_step_pause_ms`."""
    zookeeper: ZooKeeperSettings = field(default_factory=ZooKeeperSettings)
    auth: RunAuth | None = None
    """Token authentication on the brokers (its key and client token files written into
    each)."""


def zookeeper_servers(ips: Sequence[str]) -> list[ServerAddress]:
    """The ensemble's addresses, in myid order."""
    return [ServerAddress(ip, ZOOKEEPER_CLIENT_PORT, ZOOKEEPER_PEER_PORT,
                          ZOOKEEPER_ELECTION_PORT) for ip in ips]


def zookeeper_spec(image: NodeImage, node_id: int, servers: Sequence[ServerAddress],
                   settings: NodeSettings) -> NodeSpec:
    """Member `node_id` (1-based) of the ensemble `servers`, rendered by the same
    generator the local launcher uses."""
    data_dir = f"{ZOOKEEPER_DIR}/data"
    config = f"{ZOOKEEPER_DIR}/zoo.cfg"
    return NodeSpec(
        command=(image.java, *JVM_FLAGS, "-cp", ":".join(str(jar) for jar in CLASSPATH),
                 MAIN_CLASS, config),
        wait=ZooKeeperServing(ZOOKEEPER_CLIENT_PORT),
        ports={"client": ZOOKEEPER_CLIENT_PORT},
        files={
            config: render_zoo_cfg(node_id, servers, data_dir, settings.zookeeper),
            f"{data_dir}/myid": f"{node_id}\n",
        },
    )


def _mutant_args(settings: NodeSettings) -> list[str]:
    return ["--mutants", ",".join(settings.mutants)] if settings.mutants else []


DIGEST_PATH = f"{SECURITY_DIR}/{DIGEST_FILE}"


def _metadata_args(settings: NodeSettings) -> tuple[str, ...]:
    return () if settings.auth is None else settings.auth.metadata_args(DIGEST_PATH)


def _metadata_files(settings: NodeSettings) -> dict[str, str]:
    """The ZooKeeper credentials file, where the run has them."""
    return {} if settings.auth is None else {DIGEST_PATH: settings.auth.metadata_digest}


def _security_files(files: dict[str, str]) -> dict[str, str]:
    """`files` (a node's token files by name) at their paths in the container."""
    return {f"{SECURITY_DIR}/{name}": text for name, text in files.items()}


def bookie_spec(image: NodeImage, zk_connect: str, advertised_host: str,
                settings: NodeSettings) -> NodeSpec:
    """The bookie registers `advertised_host` in ZooKeeper, where brokers in other
    containers find it, and listens on every address of its namespace."""
    auth = settings.auth
    return NodeSpec(
        command=(image.python, "-m", "impl.bookie", "--port", str(BOOKIE_PORT),
                 "--advertised-host", advertised_host, "--bind-host", "0.0.0.0",
                 "--data-dir", "/data/bookie", "--zk", zk_connect, *_mutant_args(settings),
                 *(auth.bookie_args(SECURITY_DIR) if auth else ()), *_metadata_args(settings)),
        wait=TcpPort(BOOKIE_PORT, host=advertised_host),
        files={**_metadata_files(settings),
               **_security_files(auth.bookie_files() if auth else {})},
        ports={"bookie": BOOKIE_PORT},
    )


def broker_spec(image: NodeImage, cluster: str, zk_connect: str, advertised_host: str,
                session_expired_policy: str, settings: NodeSettings) -> NodeSpec:
    """`session_expired_policy` is PIP-57's, always explicit: Pulsar's default changed
    between versions."""
    auth = settings.auth
    return NodeSpec(
        command=(image.python, "-m", "impl.broker", "--cluster", cluster, "--zk", zk_connect,
                 "--port", str(BROKER_PORT), "--admin-port", str(BROKER_ADMIN_PORT),
                 "--advertised-host", advertised_host, "--bind-host", "0.0.0.0",
                 "--debug-endpoints",  # the nemesis expires sessions through it
                 "--session-timeout-ms", str(settings.session_timeout_ms),
                 "--session-expired-policy", session_expired_policy,
                 "--replication-keepalive-seconds", str(settings.replication_keepalive_s),
                 "--replicated-subscriptions-snapshot-timeout-seconds",
                 str(settings.snapshot_timeout_s),
                 "--controller-step-pause-ms", str(settings.controller_step_pause_ms),
                 *_mutant_args(settings), *(auth.broker_args(SECURITY_DIR) if auth else ()),
                 *_metadata_args(settings)),
        files={**_metadata_files(settings),
               **_security_files(auth.broker_files() if auth else {})},
        # Where it advertises, it must listen, whatever else it binds.
        wait=HttpStatus(BROKER_ADMIN_PORT, BROKER_HEALTH_PATH, host=advertised_host),
        ports={"service": BROKER_PORT, "admin": BROKER_ADMIN_PORT},
    )


LOOKUP_HEALTH_PATH = "/lookup/v2/health"


def lookup_spec(image: NodeImage, zk_connect: str) -> NodeSpec:
    """Our lookup service (the tenant-migration document's) as a node of its own, on the
    brokers' ports: `zk_connect` includes the chroot its records live under."""
    return NodeSpec(
        command=(image.python, "-m", "impl.lookup", "--port", str(BROKER_PORT),
                 "--admin-port", str(BROKER_ADMIN_PORT), "--zk", zk_connect,
                 "--bind-host", "0.0.0.0"),
        wait=HttpStatus(BROKER_ADMIN_PORT, LOOKUP_HEALTH_PATH),
        ports={"service": BROKER_PORT, "admin": BROKER_ADMIN_PORT},
    )
