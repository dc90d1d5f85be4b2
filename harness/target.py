"""The system under test, as workloads and the nemesis see it: a `Target`.

A Target is the one thing a system offers to be tested, as Jepsen's `DB` and `Client`
protocols are to Jepsen: its clusters (each with broker service URLs, admin URLs, an
optional metadata store and named nodes), and per node the faults it can take. Workloads
reach it only through public interfaces: the binary protocol through the official client,
the Pulsar admin REST API, the PIP-468 admin API and commands 70 to 72. The nemesis reaches
it only through the controls declared here: process control of a node, a network that can
drop traffic between named nodes, and capabilities such as our brokers' session debug
endpoint. What a Target does not declare, no fault may use: a fault that needs it is
refused (or skipped, in conformance runs) with the reason.

Our reference implementation as local processes (`harness.targets.local.target`) and in
containers (`harness.targets.docker.target`) are two Targets; a third party's cluster is another.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, Self

Role = Literal["broker", "bookie", "zookeeper"]
ROLES: tuple[Role, ...] = ("broker", "bookie", "zookeeper")

Capability = Literal["kill", "pause", "partition", "cut-clients", "session-debug"]
"""What the nemesis may do to a node; `CAPABILITIES` says what each means."""

SESSION_DEBUG_PATH = "/admin/v2/debug/zookeeper-session"


@dataclass(frozen=True)
class CapabilitySpec:
    """One capability: what the nemesis acts through, and the target file's hooks that give
    it to a hooks-controlled node."""

    name: Capability
    via: Literal["process", "network", "endpoint"]
    """`process`: the node's `NodeControl`; `network`: the Target's `NetworkControl`;
    `endpoint`: something the node serves itself."""
    hooks: tuple[str, ...] = ()
    """The shell hooks a target file needs for a hooks node to offer it, the fault's and
    the one that ends it (harness/targets/external/file.py); empty: no hook can give it."""


CAPABILITIES: dict[Capability, CapabilitySpec] = {spec.name: spec for spec in (
    # Kill the node (SIGKILL, its data kept) and start it again.
    CapabilitySpec("kill", "process", ("kill", "start")),
    # Freeze every process of the node (a long GC pause, its sockets open) and resume it.
    CapabilitySpec("pause", "process", ("pause", "resume")),
    # Drop the node's traffic from chosen nodes, all of it or only to one port.
    CapabilitySpec("partition", "network", ("partition", "heal")),
    # Drop what anyone but the Target's nodes sends to one of the node's ports: the
    # clients lose it, its peers keep it.
    CapabilitySpec("cut-clients", "network"),
    # A broker publishes its metadata session id and password on SESSION_DEBUG_PATH, so
    # its session can be expired directly.
    CapabilitySpec("session-debug", "endpoint"),
)}
"""The one place capabilities are declared (with the `Capability` names above): the
target file's hooks and what a third party's docker node offers are read from it, and a
backend names what it offers in harness/backends.py. Adding one is listed in
docs/architecture.md ("Adding a fault (and a capability)")."""


@dataclass(frozen=True)
class Node:
    """One node of a cluster, named `<cluster>-<role><n>` by our deployments."""

    name: str
    role: Role
    cluster: str
    address: str
    """Where the harness reaches it (a host name or IP)."""
    capabilities: frozenset[Capability] = frozenset()
    aliases: frozenset[str] = frozenset()
    """Other addresses it answers on (every address of a container on several networks):
    a broker's lookup answer may name any of them."""


def multi_host_url(urls: Sequence[str]) -> str:
    """`pulsar://a:1`, `pulsar://b:2` -> `pulsar://a:1,b:2`: the client tries each host, so
    a lookup still succeeds while one broker is down."""
    return "pulsar://" + ",".join(url.removeprefix("pulsar://") for url in urls)


@dataclass(frozen=True)
class TargetCluster:
    """How clients, the admin driver and the nemesis reach one cluster."""

    name: str
    service_urls: tuple[str, ...]
    """Each broker's binary protocol address, in the order of the broker nodes."""
    admin_urls: tuple[str, ...]
    """Each broker's admin REST address, in the same order."""
    metadata_store: str | None
    """The metadata store's `host:port,...` (ZooKeeper, no chroot), where it is offered."""
    nodes: tuple[Node, ...] = ()

    @property
    def service_url(self) -> str:
        return multi_host_url(self.service_urls)

    def of_role(self, role: Role) -> tuple[Node, ...]:
        return tuple(node for node in self.nodes if node.role == role)

    @property
    def broker_admin_urls(self) -> dict[str, str]:
        """Broker node name -> its admin URL."""
        return {node.name: url for node, url in zip(self.of_role("broker"), self.admin_urls,
                                                     strict=True)}

    def broker_at(self, url: str) -> str | None:
        """The broker node whose service or admin URL is `url`, or would be with the host
        replaced by one of the node's aliases."""
        url = url.rstrip("/")
        for node, service, admin in zip(self.of_role("broker"), self.service_urls,
                                        self.admin_urls, strict=True):
            hosts = {node.address, *node.aliases}
            for known in (service.rstrip("/"), admin.rstrip("/")):
                if url == known or _with_host(known, hosts) == _with_host(url, hosts):
                    return node.name
        return None


def _with_host(url: str, hosts: set[str]) -> str:
    """`url` with its host replaced by a placeholder when it is one of `hosts`, so two URLs
    that differ only in which of a node's addresses they name compare equal."""
    scheme, sep, rest = url.partition("://")
    netloc, slash, path = rest.partition("/")
    host, colon, port = netloc.rpartition(":")
    if colon and host in hosts:
        netloc = f"*:{port}"
    return f"{scheme}{sep}{netloc}{slash}{path}"


@dataclass(frozen=True)
class LookupEndpoint:
    """A lookup service that sends each tenant's clients to the cluster serving it (the
    tenant-migration document's): clients use `service_url`, operators `admin_url`."""

    service_url: str
    admin_url: str


class NodeControl(Protocol):
    """Process control of one node (capabilities `kill` and `pause`)."""

    @property
    def name(self) -> str: ...

    def kill(self) -> None:
        """SIGKILL, or whatever crashes the node at once; its data stays."""

    def start(self) -> None:
        """Start a killed node again; a running one is left alone."""

    def pause(self) -> None:
        """Freeze every process of the node (a long GC pause): sockets stay open."""

    def resume(self) -> None: ...


class NetworkControl(Protocol):
    """The network between a Target's nodes (capability `partition`)."""

    @property
    def names(self) -> list[str]:
        """The nodes whose traffic it can drop."""

    def drop(self, node: str, sources: Iterable[str], to_port: int | None = None) -> None:
        """From now on `node` drops what it receives from `sources` (node names), all of it
        or with `to_port` only TCP segments addressed to that port; an empty `sources`
        lets everything through again. Replaces what was set for `node` before."""

    def cut_clients(self, node: str, port: int) -> None:
        """From now on `node` drops the TCP segments addressed to its `port` from every
        address that is not one of the Target's nodes: the workloads' clients lose it,
        wherever they run, while its peers keep it. Only for nodes with capability
        `cut-clients`; `drop(node, ())` lifts it."""


class Target(Protocol):
    """A system under test: what workloads and the nemesis may use."""

    @property
    def clusters(self) -> tuple[TargetCluster, ...]:
        """Every cluster, the first the one single-cluster workloads and faults act on."""

    @property
    def session_timeout_s(self) -> float:
        """The brokers' metadata-store session timeout: how long a broker cut from the
        store, or paused, keeps its session."""

    @property
    def snapshot_timeout_s(self) -> float:
        """How long a replicated subscription's snapshot waits for the other clusters'
        answers (PIP-33). A snapshot whose requests a replication outage lost holds up the
        next one this long, so the positions a failover relies on lag until then."""

    @property
    def metadata_loss_shutdown_s(self) -> float | None:
        """The longest a broker cut from its metadata store may stay up, answering its
        health check that it cannot serve, before it shuts down (PIP-57: after its session
        is lost and, under `reconnect`, its attempts at a new one); None where the Target
        promises no such bound."""

    def control(self, node: str) -> NodeControl:
        """Process control of `node`; only for nodes with `kill` or `pause`."""

    @property
    def network(self) -> NetworkControl | None:
        """None where no node can be partitioned."""

    @property
    def lookup(self) -> LookupEndpoint | None:
        """The Target's lookup service; None where it has none."""


class Deployment(Target, Protocol):
    """A Target that starquake starts and stops itself (our reference implementation)."""

    where: str
    """Where its nodes live, for people: a directory, or the containers' label."""

    def start(self) -> None:
        """Start every node; return once every broker serves."""

    def stop(self) -> None:
        """Stop and remove everything, saving each node's log into the run directory's
        `logs/`. Safe after a failed or partial start, and more than once."""

    def __enter__(self) -> Self:
        """`start`, for `with deploy(...) as target:`; a start that fails stops what it
        began before the error goes on."""

    def __exit__(self, *exc_info: object) -> None:
        """`stop`, however the block ends (an error, Ctrl-C); the error goes on."""


def broker_at(target: Target, url: str) -> str | None:
    """The broker node (of any cluster) whose service or admin URL is `url`."""
    return next((name for cluster in target.clusters
                 if (name := cluster.broker_at(url)) is not None), None)
