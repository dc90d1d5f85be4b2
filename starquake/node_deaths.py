"""Which nodes of a served cluster died since the last look.

`starquake serve` asks twice a second. A node that exits is reported once, with its exit
code; one started again (by a `start` hook) is watched afresh.
"""

from __future__ import annotations

from collections.abc import Mapping

from harness.targets.local.cluster import Node
from history.errors import EnvironmentProblem


class NodeDied(EnvironmentProblem):
    """A node of the served cluster exited while nothing was meant to stop it."""

    def __init__(self, name: str, code: int | None) -> None:
        super().__init__(f"node {name} died (exit code {code}); the cluster was stopped")


class NodeDeaths:
    def __init__(self, nodes: Mapping[str, Node]) -> None:
        self._nodes = dict(nodes)
        self._reported: set[str] = set()

    def new(self) -> list[tuple[str, int | None]]:
        """(name, exit code) of each node that stopped running since the last call."""
        dead = []
        for name, node in self._nodes.items():
            if node.running:
                self._reported.discard(name)
            elif name not in self._reported:
                self._reported.add(name)
                dead.append((name, node.process.returncode))
        return dead
