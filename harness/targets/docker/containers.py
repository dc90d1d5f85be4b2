"""One node of a containerised cluster: a network identity and a process, in two containers.

A node is two containers. The **netns holder** runs `sleep` and owns the node's network
namespace: its addresses on the cluster and WAN networks, and the nemesis's iptables rules.
The **process container** runs the node's command inside that namespace
(`--network container:<holder>`). Killing and restarting the process (SIGKILL, `docker
start`) therefore keeps the node's addresses and any partition in force, as a crashed
process on a real machine would: a partition and a crash are independent faults.

What runs in the process container is a `NodeSpec`: command, files, environment and how to
tell that it serves. ZooKeeper, bookies and brokers are just different specs
(harness/targets/docker/node_specs.py), and so would be a third party's nodes.
"""

from __future__ import annotations

import io
import logging
import tarfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import docker.errors
from docker import DockerClient
from docker.models.containers import Container
from docker.models.networks import Network

from harness.targets.docker.engine import NETNS_ROLE, run_labels
from harness.targets.docker.images import NodeImage
from harness.waits import WaitStrategy, wait_ready
from history.errors import EnvironmentProblem

log = logging.getLogger(__name__)

STOP_TIMEOUT_S = 5


class NodeControlFailed(EnvironmentProblem):
    """The engine refused an operation on a node's containers."""


@dataclass(frozen=True)
class NodeSpec:
    """What one node runs. `files` (absolute path in the container -> text) are written
    before the first start and survive restarts, as a configuration on a disk would."""

    command: tuple[str, ...]
    wait: WaitStrategy
    ports: Mapping[str, int] = field(default_factory=dict)
    files: Mapping[str, str] = field(default_factory=dict)
    environment: Mapping[str, str] = field(default_factory=dict)


def _files_tar(files: Mapping[str, str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for path, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(path.lstrip("/"))
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class ContainerNode:
    """One node: `attach` gives it addresses, `launch` starts its process; then the
    process controls a nemesis needs (kill, start, stop, restart, pause, resume) and
    `run_in_netns` for iptables."""

    def __init__(self, client: DockerClient, image: NodeImage, run_id: str, cluster: str,
                 name: str, role: str) -> None:
        self.name = name
        self.role = role
        self.cluster = cluster
        self._client = client
        self._image = image
        self._run_id = run_id
        self._holder: Container | None = None
        self._process: Container | None = None
        self.spec: NodeSpec | None = None
        self.addresses: dict[str, str] = {}
        """Network name -> this node's address on it (the cluster network first)."""

    def _labels(self, role: str) -> dict[str, str]:
        return run_labels(self._run_id, cluster=self.cluster, role=role, node=self.name)

    def _container_name(self, suffix: str = "") -> str:
        return f"sq-{self._run_id}-{self.name}{suffix}"

    # --- network identity -------------------------------------------------------------

    def attach(self, networks: Sequence[Network]) -> None:
        """Create and start the netns holder on `networks` (the first is the node's own
        cluster network) and learn its addresses there."""
        try:
            holder = self._client.containers.create(
                self._image.tag, ["sleep", "infinity"], name=self._container_name("-net"),
                hostname=self.name, labels=self._labels(NETNS_ROLE), init=True,
                cap_add=["NET_ADMIN"], network=networks[0].name,
                volumes=self._image.volumes, environment=dict(self._image.environment))
            self._holder = holder
            for network in networks[1:]:
                network.connect(holder)
            holder.start()
            holder.reload()
        except docker.errors.APIError as exc:
            raise NodeControlFailed(f"{self.name}: could not start its network holder: "
                                    f"{exc.explanation or exc}") from None
        attached = holder.attrs["NetworkSettings"]["Networks"]
        self.addresses = {n.name: attached[n.name]["IPAddress"] for n in networks}

    @property
    def ip(self) -> str:
        """The address on the node's cluster network: where the harness and the node's
        cluster peers reach it."""
        return next(iter(self.addresses.values()))

    @property
    def advertised_ip(self) -> str:
        """The address every node of every cluster, and the host, can reach: the WAN
        address when the node has one (it joins the WAN last), else its cluster address.
        Brokers advertise it, so a remote cluster's lookups lead somewhere reachable."""
        return next(reversed(self.addresses.values()))

    @property
    def ips(self) -> tuple[str, ...]:
        """Every address of the node (a partition drops traffic from all of them)."""
        return tuple(self.addresses.values())

    def run_in_netns(self, argv: Sequence[str]) -> tuple[int, str]:
        """Run `argv` in the node's network namespace, with NET_ADMIN (iptables), even
        while its process is killed or paused; returns exit code and output."""
        assert self._holder is not None, f"{self.name} is not attached"
        result = self._holder.exec_run(list(argv))
        return result.exit_code, result.output.decode(errors="replace")

    # --- the process ----------------------------------------------------------------------

    def launch(self, spec: NodeSpec) -> None:
        """Create the process container from `spec`, write its files, start it."""
        assert self._holder is not None, f"{self.name} is not attached"
        self.spec = spec
        try:
            process = self._client.containers.create(
                self._image.tag, list(spec.command), name=self._container_name(),
                labels=self._labels(self.role), init=True,
                network_mode=f"container:{self._holder.id}",
                volumes=self._image.volumes,
                environment={**self._image.environment, **spec.environment},
                stop_signal="SIGTERM")
            self._process = process
            if spec.files:
                process.put_archive("/", _files_tar(spec.files))
            process.start()
        except docker.errors.APIError as exc:
            raise NodeControlFailed(f"{self.name}: could not start: "
                                    f"{exc.explanation or exc}") from None
        log.info("%s started in %s at %s", self.name, process.name, self.ip)

    @property
    def process(self) -> Container:
        assert self._process is not None, f"{self.name} has not been launched"
        return self._process

    def status(self) -> str:
        """The engine's word for the process: `running`, `paused`, `exited`, `created`."""
        self.process.reload()
        return str(self.process.status)

    def running(self) -> bool:
        """True while the process exists, paused or not."""
        return self.status() in ("running", "paused")

    def wait_ready(self, timeout: float) -> None:
        assert self.spec is not None
        wait_ready(self, self.spec.wait, timeout)

    def logs(self) -> str:
        """Everything the process wrote to stdout and stderr, across restarts."""
        output: bytes = self.process.logs(stdout=True, stderr=True)
        return output.decode(errors="replace")

    def exec(self, argv: Sequence[str]) -> int:
        return int(self.process.exec_run(list(argv)).exit_code)

    def kill(self) -> None:
        """SIGKILL every process of the node (its init, hence all of them)."""
        self._control("kill", lambda: self.process.kill("SIGKILL"),
                      expect=("running", "paused"))

    def start(self) -> None:
        """Start the process again after a kill or stop, with its files and data."""
        self._control("start", self.process.start, expect=("exited", "created"))

    def stop(self) -> None:
        """SIGTERM, then SIGKILL after a few seconds (a paused node is resumed first, so
        it can act on the SIGTERM)."""
        self.resume()
        self._control("stop", lambda: self.process.stop(timeout=STOP_TIMEOUT_S),
                      expect=("running",))

    def restart(self) -> None:
        """Stop cleanly and start again."""
        self.resume()
        self._control("restart", lambda: self.process.restart(timeout=STOP_TIMEOUT_S),
                      expect=("running", "exited", "created"))

    def pause(self) -> None:
        """Freeze every process of the node (the cgroup freezer: SIGSTOP semantics without
        a signal a process could observe). Sockets stay open, nothing answers."""
        self._control("pause", self.process.pause, expect=("running",))

    def resume(self) -> None:
        self._control("resume", self.process.unpause, expect=("paused",))

    def _control(self, what: str, action: Callable[[], object], expect: tuple[str, ...]) -> None:
        """Run `action` when the process is in one of the `expect` states; any other state
        means the operation has nothing to do (killing a dead node)."""
        if self.status() not in expect:
            return
        try:
            action()
        except docker.errors.APIError as exc:
            raise NodeControlFailed(f"{self.name}: {what} failed: "
                                    f"{exc.explanation or exc}") from None

    def __repr__(self) -> str:
        return f"ContainerNode({self.name!r}, {self.role}, {self.ip if self.addresses else '-'})"

