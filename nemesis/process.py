"""Process faults: kill and start (SIGKILL, a crash), pause and resume (a long GC pause).

A node is whatever a Target's `control()` gives: a container node
(harness/targets/docker/containers.py) or a local process
(harness/targets/local/cluster.py). In containers, kill sends SIGKILL to the node's init and
so to every process of it; pause uses the cgroup freezer, which stops the
processes as SIGSTOP would (sockets open, the kernel still acknowledging TCP, nothing
answering) without a signal any process could notice: PIP-57's long-GC case.

`ProcessFaults` remembers what it killed and paused, so the runner's final heal can bring
every node back before the run's final drain.
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.target import NodeControl
from nemesis.events import NemesisEvent, node_names


class ProcessFaults:
    def __init__(self) -> None:
        self._killed: dict[str, NodeControl] = {}
        self._paused: dict[str, NodeControl] = {}

    def kill(self, nodes: Iterable[NodeControl]) -> NemesisEvent:
        """SIGKILL: the node crashes; its data (on its disk) stays."""
        nodes = list(nodes)
        for node in nodes:
            # A paused node dies as well; it is no longer paused afterwards.
            self._paused.pop(node.name, None)
            node.kill()
            self._killed[node.name] = node
        return NemesisEvent("kill", ",".join(node_names(nodes)), node_names(nodes))

    def start(self, nodes: Iterable[NodeControl]) -> NemesisEvent:
        """Start killed nodes again (a node already running is left alone)."""
        nodes = list(nodes)
        for node in nodes:
            node.start()
            self._killed.pop(node.name, None)
        return NemesisEvent("start", ",".join(node_names(nodes)), node_names(nodes))

    def pause(self, nodes: Iterable[NodeControl]) -> NemesisEvent:
        nodes = list(nodes)
        for node in nodes:
            node.pause()
            self._paused[node.name] = node
        return NemesisEvent("pause", ",".join(node_names(nodes)), node_names(nodes))

    def resume(self, nodes: Iterable[NodeControl]) -> NemesisEvent:
        nodes = list(nodes)
        for node in nodes:
            node.resume()
            self._paused.pop(node.name, None)
        return NemesisEvent("resume", ",".join(node_names(nodes)), node_names(nodes))

    @property
    def killed(self) -> tuple[str, ...]:
        """Nodes killed and not started since."""
        return tuple(self._killed)

    @property
    def paused(self) -> tuple[str, ...]:
        """Nodes paused and not resumed (nor killed) since."""
        return tuple(self._paused)
