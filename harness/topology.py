"""What our reference implementation's deployments start, and what they name each node.

Both deployments (local processes and containers) name nodes alike,
`<cluster>-zk<n>`, `<cluster>-bookie<n>`, `<cluster>-broker<n>` from 1, so a scenario's
fault targets and a seed's schedule mean the same nodes on either. This module is the one
place those names are made.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.backends import backend
from harness.target import ROLES, Node, Role
from wire.keep_alive import KEEPALIVE_S

NAME_INFIX: dict[Role, str] = {"broker": "broker", "bookie": "bookie", "zookeeper": "zk"}

REFERENCE_RECONNECT_RETRIES = 3
"""The reference brokers' `--session-reconnect-retries` default, which every deployment we
start keeps."""


def metadata_loss_shutdown_s(policy: str, session_timeout_s: float) -> float:
    """How long a reference broker cut from its metadata store stays up, unable to serve,
    before it shuts down (PIP-57): a session timeout before it gives its session up, then,
    under `reconnect`, a session timeout for each attempt at a new one."""
    retries = REFERENCE_RECONNECT_RETRIES if policy == "reconnect" else 0
    return (1 + retries) * session_timeout_s


MAX_CLUSTERS = 8
MAX_PER_CLUSTER: dict[Role, int] = {"zookeeper": 7, "bookie": 9, "broker": 16}
MAX_NODES = sum(MAX_PER_CLUSTER.values())
"""The most a run starts: nodes per cluster by role, clusters, and nodes of all clusters
together (one cluster at every maximum). Each node is a process of its own (a reference
broker or bookie about 50 to 70 MiB, a ZooKeeper JVM up to its 256 MiB heap and more), so
32 nodes stay within the 8 GiB a laptop can spare and start in a minute or two on two
cores; 7 ZooKeepers outlive 3 failures, more only slow their quorum down. A scenario
asking more is refused as it is read (docs/scenarios.md), not when the machine runs out."""


REFERENCE_BROKER_SETTINGS = ("replication_keepalive_s", "snapshot_timeout_s",
                             "controller_step_pause_s")
"""`Topology` settings only our reference brokers read (a backend's `reference_brokers`)."""


@dataclass(frozen=True)
class Topology:
    clusters: tuple[str, ...] = ("a",)
    zookeepers: int = 1
    bookies: int = 1
    brokers: int = 3
    backend: str = "docker"
    session_expired_policy: str = "reconnect"
    """PIP-57's policy; Pulsar's default changed between versions, so it is always explicit."""
    session_timeout_ms: int = 4000
    """The brokers' ZooKeeper session timeout: short, so a pause or partition past it
    expires the session within a run."""
    replication_keepalive_s: float = KEEPALIVE_S
    """The brokers' replicator keep-alive (`--replication-keepalive-seconds`): Pulsar's 30 s,
    so a WAN cut that drops packets leaves a replicator looking connected for a minute or
    more; shorter, it knows within a run that it is cut."""
    snapshot_timeout_s: float = 30.0
    """The brokers' replicated-subscription snapshot timeout
    (`--replicated-subscriptions-snapshot-timeout-seconds`): Pulsar's 30 s; shorter, a
    run sees a topic ask again after a request that was never answered."""
    controller_step_pause_s: float = 0.0
    """A fault control of the reference brokers (`--controller-step-pause-ms`): the
    scalable-topic controller's pause between terminating a change's parents (and its last
    check that it leads) and writing the layout, so that a fault can fall in the window;
    0, no pause."""
    auth: str = "none"
    """`token`: brokers require tokens and check permissions; the harness presents a
    superuser's (harness/targets/run_auth.py)."""

    @property
    def controller_step_pause_ms(self) -> int:
        return round(self.controller_step_pause_s * 1000)

    def count(self, role: Role) -> int:
        return {"broker": self.brokers, "bookie": self.bookies,
                "zookeeper": self.zookeepers}[role]

    def node_names(self, cluster: str, role: Role) -> list[str]:
        """The names of `cluster`'s nodes of `role`, in start order."""
        return [node_name(cluster, role, n) for n in range(1, self.count(role) + 1)]


AUTH_MODES = ("none", "token")


def node_name(cluster: str, role: Role, n: int) -> str:
    return f"{cluster}-{NAME_INFIX[role]}{n}"


def planned_nodes(topology: Topology, backend_name: str | None = None) -> tuple[Node, ...]:
    """Every node the topology starts, with the capabilities of the backend `backend_name`
    (by default the topology's), before anything runs: what a schedule is drawn over. The
    address is loopback or the node's name (harness/backends.py) until the deployment says
    more."""
    deployed = backend(backend_name or topology.backend)
    return tuple(Node(name, role, cluster, "127.0.0.1" if deployed.on_loopback else name,
                      deployed.capabilities)
                 for cluster in topology.clusters for role in ROLES
                 for name in topology.node_names(cluster, role))
