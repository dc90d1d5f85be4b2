"""Process faults: kill and start (SIGKILL, a crash), pause and resume (a long GC pause).

A node is anything with the controls below: a container node (harness/containers.py) or a
local process (harness/local_cluster.py). In containers, kill sends SIGKILL to the node's
init and so to every process of it; pause uses the cgroup freezer, which stops the
processes as SIGSTOP would (sockets open, the kernel still acknowledging TCP, nothing
answering) without a signal any process could notice: PIP-57's long-GC case.

`ProcessFaults` remembers what it killed and paused, so `heal()` can bring every node
back before the run's final drain.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from nemesis.events import NemesisEvent, node_names


class ProcessNode(Protocol):
    @property
    def name(self) -> str: ...

    def kill(self) -> None: ...

    def start(self) -> None: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...


class ProcessFaults:
    def __init__(self) -> None:
        self._killed: dict[str, ProcessNode] = {}
        self._paused: dict[str, ProcessNode] = {}

    def kill(self, nodes: Iterable[ProcessNode]) -> NemesisEvent:
        """SIGKILL: the node crashes; its data (on its disk) stays."""
        nodes = list(nodes)
        for node in nodes:
            # A paused node dies as well; it is no longer paused afterwards.
            self._paused.pop(node.name, None)
            node.kill()
            self._killed[node.name] = node
        return NemesisEvent("kill", ",".join(node_names(nodes)), node_names(nodes))

    def start(self, nodes: Iterable[ProcessNode]) -> NemesisEvent:
        """Start killed nodes again (a node already running is left alone)."""
        nodes = list(nodes)
        for node in nodes:
            node.start()
            self._killed.pop(node.name, None)
        return NemesisEvent("start", ",".join(node_names(nodes)), node_names(nodes))

    def pause(self, nodes: Iterable[ProcessNode]) -> NemesisEvent:
        nodes = list(nodes)
        for node in nodes:
            node.pause()
            self._paused[node.name] = node
        return NemesisEvent("pause", ",".join(node_names(nodes)), node_names(nodes))

    def resume(self, nodes: Iterable[ProcessNode]) -> NemesisEvent:
        nodes = list(nodes)
        for node in nodes:
            node.resume()
            self._paused.pop(node.name, None)
        return NemesisEvent("resume", ",".join(node_names(nodes)), node_names(nodes))

    def heal(self) -> list[NemesisEvent]:
        """Resume every paused node and start every killed one; the events of what it did
        (none when nothing was down)."""
        events = []
        if self._paused:
            events.append(self.resume(list(self._paused.values())))
        if self._killed:
            events.append(self.start(list(self._killed.values())))
        return events
