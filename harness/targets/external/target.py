"""A running system starquake did not start, as a `Target`: what a target file describes
(harness/targets/external/file.py).

Each node's capabilities come from its control: a docker node can be killed and paused, and
partitioned where this machine can enter its network namespace; a hooks node takes the
faults whose hooks the file has; a node without control takes none. No node has
`session-debug` unless the file says `session_debug = true` on it. Nothing is started or
stopped: the system is the user's, and the only thing a run leaves in it is what its
faults did (every partition is healed at the end of a run, as on our own deployments).
"""

from __future__ import annotations

import socket
from collections import Counter
from collections.abc import Iterable

from docker import DockerClient

from harness.credentials import Credentials, present
from harness.target import (
    Capability,
    LookupEndpoint,
    NetworkControl,
    Node,
    NodeControl,
    TargetCluster,
)
from harness.targets.docker.engine import connect
from harness.targets.docker.iptables import PartitionFailed
from harness.targets.external.docker_control import (
    ContainerControl,
    container_address,
    docker_capabilities,
)
from harness.targets.external.file import NodeEntry, TargetFile
from harness.targets.external.hook_control import HookControl, HookPartitions, Hooks
from history.errors import BadInput


class NodeNotControlled(BadInput):
    """Process control was asked of a node the target file gives none."""


class ExternalTarget:
    """A `Target` over a target file; the Docker engine is connected to on first need."""

    def __init__(self, file: TargetFile, client: DockerClient | None = None) -> None:
        self.file = file
        self._client = client
        present(None if file.auth_token is None
                else Credentials(file.auth_token, file.unprivileged_auth_token))
        self._hooks = Hooks(file)
        self._containers = {node.name: ContainerControl(self._docker, node, file.compose_project)
                            for node in file.nodes if node.control == "docker"}
        docker = docker_capabilities() if self._containers else frozenset()
        self._capabilities = {node.name: _capabilities(node, docker, file)
                              for node in file.nodes}
        self._clusters: tuple[TargetCluster, ...] | None = None
        self._shared_network: str | None = None
        self._lookup: LookupEndpoint | None = None
        partitionable = [name for name, caps in self._capabilities.items()
                         if "partition" in caps]
        self._network = (ExternalNetwork(self, partitionable, HookPartitions(self._hooks, file))
                         if partitionable else None)

    def _docker(self) -> DockerClient:
        if self._client is None:
            self._client = connect()
        return self._client

    @property
    def clusters(self) -> tuple[TargetCluster, ...]:
        """Built once, on first use: a docker node without an `address` asks its container,
        and URLs naming containers get their addresses (`resolve_host`)."""
        if self._clusters is None:
            self._clusters = tuple(
                TargetCluster(cluster.name, tuple(map(self._resolve_url, cluster.service_urls)),
                              tuple(map(self._resolve_url, cluster.admin_urls)),
                              cluster.metadata_store and ",".join(
                                  self._resolve_netloc(part)
                                  for part in cluster.metadata_store.split(",")),
                              tuple(Node(node.name, node.role, cluster.name,
                                         self.address(node.name),
                                         self._capabilities[node.name],
                                         frozenset(self._container_ips(node.name)))
                                    for node in cluster.nodes))
                for cluster in self.file.clusters)
        return self._clusters

    def _container_ips(self, node: str) -> tuple[str, ...]:
        return self._containers[node].ips() if node in self._containers else ()

    def resolve_host(self, host: str) -> str:
        """Where `host`, as a URL of the file spells it, is reached. The name of a docker
        node is that node's address; a name DNS does not know but a container on the
        engine has is that container's address (so a file can name the containers of a
        Compose project or of `starquake cluster up`, whose addresses the engine picks);
        anything else is left to DNS."""
        if host in self._containers:
            return self.address(host)
        try:
            socket.getaddrinfo(host, None)
            return host
        except OSError:
            return container_address(self._docker(), host, self.shared_network()) or host

    def _resolve_netloc(self, netloc: str) -> str:
        host, colon, port = netloc.rpartition(":")
        return f"{self.resolve_host(host)}:{port}" if colon and host else netloc

    def _resolve_url(self, url: str) -> str:
        scheme, sep, rest = url.partition("://")
        netloc, slash, path = rest.partition("/")
        return f"{scheme}{sep}{self._resolve_netloc(netloc)}{slash}{path}"

    @property
    def session_timeout_s(self) -> float:
        return self.file.session_timeout_s

    @property
    def snapshot_timeout_s(self) -> float:
        return self.file.snapshot_timeout_s

    @property
    def metadata_loss_shutdown_s(self) -> float | None:
        return self.file.metadata_loss_shutdown_s

    def control(self, node: str) -> NodeControl:
        entry = self._entry(node)
        if entry.control == "docker":
            return self._containers[node]
        if entry.control == "hooks" and self._capabilities[node] & {"kill", "pause"}:
            return HookControl(self._hooks, entry)
        raise NodeNotControlled(f"{self.file.path}: node {node} has no process control "
                                f"(control = {entry.control!r})")

    @property
    def network(self) -> NetworkControl | None:
        return self._network

    @property
    def lookup(self) -> LookupEndpoint | None:
        """The file's lookup service, its hosts resolved as the clusters' (once)."""
        found = self.file.lookup
        if found is not None and self._lookup is None:
            self._lookup = LookupEndpoint(self._resolve_url(found.service_url),
                                          self._resolve_url(found.admin_url))
        return self._lookup

    # --- what the network control and the checks need ---------------------------------------

    def containers(self) -> dict[str, ContainerControl]:
        """Node name -> the control of its container, for every docker node."""
        return dict(self._containers)

    def address(self, node: str) -> str:
        """Where the harness reaches `node`: the file's address, or its container's on the
        shared network (`shared_network`)."""
        entry = self._entry(node)
        if entry.address is not None:
            return entry.address
        return self._containers[node].address(self.shared_network())

    def shared_network(self) -> str | None:
        """The Docker network most of the file's containers are on (the first such in the
        engine's order): a container on several networks is reached, and named to other
        nodes (a cluster registering another for geo-replication), by its address there,
        since every node can reach that one. Our own multi-cluster deployments put every
        node on a WAN network besides its cluster's, and this picks the WAN."""
        if self._shared_network is None:
            counts = Counter(network for control in self._containers.values()
                             for network in control.networks())
            self._shared_network = (max(counts, key=lambda n: counts[n]) if counts else "")
        return self._shared_network or None

    def source_ips(self, node: str) -> set[str]:
        """The IPv4 addresses packets from `node` may carry: its `address` resolved, and
        for a docker node every address of its container."""
        entry = self._entry(node)
        ips = set(self._containers[node].ips()) if node in self._containers else set()
        if entry.address is not None:
            try:
                infos = socket.getaddrinfo(entry.address, None, socket.AF_INET)
            except OSError as exc:
                raise PartitionFailed(f"{node}: its address {entry.address!r} does not "
                                      f"resolve ({exc})") from None
            ips |= {str(info[4][0]) for info in infos}
        if not ips:
            raise PartitionFailed(f"{node}: no address is known to drop its packets by")
        return ips

    def _entry(self, node: str) -> NodeEntry:
        try:
            return self.file.node(node)
        except KeyError:
            raise NodeNotControlled(f"{self.file.path}: no node is called {node!r}") from None


def _capabilities(node: NodeEntry, docker: frozenset[Capability], file: TargetFile
                  ) -> frozenset[Capability]:
    control: frozenset[Capability] = {"docker": docker, "hooks": file.hook_capabilities,
                                      "none": frozenset()}[node.control]
    return (control | {"session-debug"}) if node.session_debug else control


class ExternalNetwork:
    """A `NetworkControl` over a mix of docker nodes (iptables in their namespace) and
    hooks nodes (the partition and heal hooks). A drop's sources may be any node with an
    address, partitionable or not."""

    def __init__(self, target: ExternalTarget, names: list[str], hooks: HookPartitions
                 ) -> None:
        self._target = target
        self._names = names
        self._hooks = hooks

    @property
    def names(self) -> list[str]:
        return list(self._names)

    def drop(self, node: str, sources: Iterable[str], to_port: int | None = None) -> None:
        if node not in self._names:
            raise NodeNotControlled(f"{self._target.file.path}: node {node} cannot be "
                                    f"partitioned; nodes that can: {', '.join(self._names)}")
        sources = sorted(set(sources))
        containers = self._target.containers()
        if node in containers:
            ips = sorted({ip for source in sources for ip in self._target.source_ips(source)})
            containers[node].drop(ips, to_port)
        else:
            self._hooks.drop(self._target.file.node(node),
                             {source: self._target.address(source) for source in sources},
                             to_port)

    def cut_clients(self, node: str, port: int) -> None:
        container = self._target.containers().get(node)
        if container is None:
            raise NodeNotControlled(f"{self._target.file.path}: node {node} cannot have its "
                                    f"clients cut: only docker nodes can")
        spare = {ip for peer in self._target.file.nodes
                 if peer.address is not None or peer.name in self._target.containers()
                 for ip in self._target.source_ips(peer.name)}
        container.cut_clients(sorted(spare), port)
