"""Control of a container starquake did not create: the docker SDK for the process, the
host's `nsenter` and `iptables` for the network.

Kill is SIGKILL, start is `docker start`, pause and resume are the engine's cgroup freezer,
each done only from a state where it means something (killing a dead node does nothing),
as for our own containers (harness/targets/docker/containers.py).

Partitions enter the network namespace of the container from this machine
(`nsenter -t <pid> -n`) and run the host's iptables there with our chain, exactly as for our
own nodes (harness/targets/docker/iptables.py): the container needs neither iptables nor
NET_ADMIN. The pid is that of the container holding the namespace: the container itself, or
X for `network_mode: container:X`, whose namespace outlives a kill of the process. A
container with a namespace of its own loses it, rules included, when killed; its drop is
kept and applied again when it starts, so a crash and a partition stay independent faults.
Healing removes our chain and every jump to it, and nothing else. A container in the
host's namespace is never partitioned: that would cut this machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Sequence

import docker.errors
from docker import DockerClient
from docker.models.containers import Container

from harness.target import CAPABILITIES, Capability
from harness.targets.docker.iptables import (
    PartitionFailed,
    apply_input,
    remove_chain,
    restore_cut_clients,
    restore_input,
)
from harness.targets.external.file import NodeEntry
from history.errors import EnvironmentProblem

NSENTER_TIMEOUT_S = 30.0
PARTITION_TOOLS = ("nsenter", "iptables", "iptables-restore")
COMPOSE_PROJECT_LABEL = "com.docker.compose.project"
COMPOSE_SERVICE_LABEL = "com.docker.compose.service"


class ContainerNotFound(EnvironmentProblem):
    """A node's container is not on the engine, or its labels match several."""


class ContainerControlFailed(EnvironmentProblem):
    """The engine refused an operation on a node's container, or it has no address."""


def partition_problem() -> str | None:
    """Why this machine cannot partition containers, or None when it can."""
    missing = [tool for tool in PARTITION_TOOLS if shutil.which(tool) is None]
    if missing:
        return f"{', '.join(missing)} not found on PATH"
    if os.geteuid() != 0:
        return "entering a container's network namespace needs root"
    return None


def docker_capabilities() -> frozenset[Capability]:
    """What a docker-controlled node can take on this machine: every capability through
    process control, and through the network where this machine can enter namespaces."""
    vias = ("process",) if partition_problem() else ("process", "network")
    return frozenset(name for name, spec in CAPABILITIES.items() if spec.via in vias)


def find_container(client: DockerClient, node: NodeEntry, compose_project: str | None
                   ) -> Container:
    """The one container `node` names; raises ContainerNotFound."""
    ref = node.container
    assert ref is not None, f"{node.name} is not a docker node"
    if ref.container is not None:
        try:
            return client.containers.get(ref.container)
        except docker.errors.NotFound:
            raise ContainerNotFound(f"{node.name}: {ref} cannot be reached: the Docker engine "
                                    f"has no such container") from None
    labels = dict(ref.labels) if ref.service is None else {
        COMPOSE_PROJECT_LABEL: compose_project or "", COMPOSE_SERVICE_LABEL: ref.service}
    found = client.containers.list(
        all=True, filters={"label": [f"{key}={value}" for key, value in labels.items()]})
    if len(found) != 1:
        raise ContainerNotFound(f"{node.name}: {ref} cannot be reached: {len(found)} "
                                f"containers match, not one")
    container: Container = found[0]
    return container


def _namespace_holder(client: DockerClient, container: Container, owner: str
                      ) -> Container | None:
    """The container whose network namespace `container`'s is (itself, or X for
    `network_mode: container:X`); None for the host's."""
    mode = str(container.attrs["HostConfig"].get("NetworkMode", ""))
    if mode == "host":
        return None
    if not mode.startswith("container:"):
        return container
    try:
        return client.containers.get(mode.removeprefix("container:"))
    except docker.errors.NotFound:
        raise ContainerNotFound(f"{owner}: the container holding its network namespace, "
                                f"{mode}, is gone") from None


def container_networks(client: DockerClient, container: Container, owner: str
                       ) -> dict[str, str]:
    """Network name -> `container`'s address on it (through the namespace it shares), in
    the engine's order; empty while it is stopped or in the host's network. `owner` names
    it in errors."""
    holder = _namespace_holder(client, container, owner)
    if holder is None:
        return {}
    networks = holder.attrs["NetworkSettings"].get("Networks") or {}
    return {name: ip for name, net in networks.items() if (ip := net.get("IPAddress"))}


def pick_address(networks: dict[str, str], preferred: str | None) -> str | None:
    """The address on `preferred` when the container is on it, else on its first network."""
    if preferred in networks:
        return networks[preferred]
    return next(iter(networks.values()), None)


def container_address(client: DockerClient, name: str, preferred: str | None) -> str | None:
    """The address (`pick_address`) of the container called `name`, None when there is no
    such container or it has none: how a URL may name a container instead of its address."""
    try:
        container = client.containers.get(name)
    except docker.errors.NotFound:
        return None
    return pick_address(container_networks(client, container, name), preferred)


class ContainerControl:
    """A `NodeControl` of one existing container, and the network namespace it lives in
    (a `harness.targets.docker.iptables.Namespace`)."""

    def __init__(self, client: Callable[[], DockerClient], node: NodeEntry,
                 compose_project: str | None) -> None:
        self._client = client
        self._node = node
        self._compose_project = compose_project
        self._id: str | None = None
        self._learned: dict[str, str] = {}
        self._input: str | None = None
        """The rules its namespace holds (iptables-restore text); None: healed."""

    @property
    def name(self) -> str:
        return self._node.name

    def container(self) -> Container:
        """The node's container with its current state; found once, then kept by id."""
        if self._id is None:
            container = find_container(self._client(), self._node, self._compose_project)
            self._id = str(container.id)
            return container
        try:
            return self._client().containers.get(self._id)
        except docker.errors.NotFound:
            raise ContainerNotFound(f"{self.name}: its container {self._id[:12]} was "
                                    f"removed") from None

    # --- addresses ----------------------------------------------------------------------

    def networks(self) -> dict[str, str]:
        """Network name -> the container's address on it, as last seen running (a stopped
        container has none)."""
        found = container_networks(self._client(), self.container(), self.name)
        if found:
            self._learned = found
        return self._learned

    def ips(self) -> tuple[str, ...]:
        """Every address of the container: what a peer's drop must name."""
        return tuple(self.networks().values())

    def address(self, preferred_network: str | None = None) -> str:
        """Where the harness reaches the node: the file's `address`, or the container's
        address on `preferred_network` if it is on it, else on its first network."""
        if self._node.address is not None:
            return self._node.address
        found = pick_address(self.networks(), preferred_network)
        if found is None:
            raise ContainerControlFailed(
                f"{self.name}: {self._node.container} has no address of its own (stopped, "
                f"or in the host's network?); give the node an `address`")
        return found

    # --- the process ----------------------------------------------------------------------

    def kill(self) -> None:
        self._act("kill", ("running", "paused"), lambda c: c.kill("SIGKILL"))

    def start(self) -> None:
        """Start the container again; a drop set while it was down is applied now."""
        self._act("start", ("exited", "created"), lambda c: c.start())
        if self._input is not None:
            apply_input(self, self._input)

    def pause(self) -> None:
        self._act("pause", ("running",), lambda c: c.pause())

    def resume(self) -> None:
        self._act("resume", ("paused",), lambda c: c.unpause())

    def _act(self, what: str, expect: tuple[str, ...], action: Callable[[Container], object]
             ) -> None:
        """Run `action` when the container is in one of the `expect` states; any other
        state means it has nothing to do."""
        container = self.container()
        if container.status not in expect:
            return
        try:
            action(container)
        except docker.errors.APIError as exc:
            raise ContainerControlFailed(f"{self.name}: {what} failed: "
                                         f"{exc.explanation or exc}") from None

    # --- the network namespace --------------------------------------------------------------

    def _namespace_pid(self) -> int | None:
        """The pid to enter the node's network namespace by; None while it has none."""
        holder = _namespace_holder(self._client(), self.container(), self.name)
        if holder is None:
            raise PartitionFailed(f"{self.name}: its container is in the host's network "
                                  f"namespace; partitioning it would cut this machine")
        pid = int(holder.attrs["State"].get("Pid") or 0)
        return pid or None

    def run_in_netns(self, argv: Sequence[str]) -> tuple[int, str]:
        """Run `argv` on this machine inside the node's network namespace."""
        pid = self._namespace_pid()
        if pid is None:
            return 1, "the container holding its network namespace is not running"
        try:
            done = subprocess.run(["nsenter", "-t", str(pid), "-n", *argv], capture_output=True,
                                  text=True, errors="replace", timeout=NSENTER_TIMEOUT_S,
                                  check=False)
        except subprocess.TimeoutExpired:
            return 1, f"nsenter did not finish within {NSENTER_TIMEOUT_S:g} s"
        return done.returncode, done.stdout + done.stderr

    def drop(self, ips: Sequence[str], to_port: int | None) -> None:
        """Drop what the node receives from `ips` (nothing: heal), replacing what was set
        before. While the namespace is gone (a killed container) the drop waits for start."""
        self._set_input(restore_input(ips, to_port) if ips else None)

    def cut_clients(self, spare: Sequence[str], port: int) -> None:
        """Drop the TCP segments to `port` from everyone but `spare` (the Target's nodes),
        replacing what was set before, as `drop` does."""
        self._set_input(restore_cut_clients(spare, port))

    def _set_input(self, restore: str | None) -> None:
        self._input = restore
        if self._namespace_pid() is None:
            return
        if restore is None:
            remove_chain(self)
        else:
            apply_input(self, restore)
