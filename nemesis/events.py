"""What a fault reports: the nemesis operation as the history records it.

Every fault function returns a `NemesisEvent`; the run's history writer records it as the
nemesis's `invoke`/`ok` pair (docs/history.md, "nemesis ops"), with the targets
in `detail` so the checkers' statistics and the report can tell what was hit when.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class NemesisEvent:
    f: str
    """The operation, from the history catalogue: `partition`, `heal`, `kill`, `start`,
    `pause`, `resume`, `cut-wan`, `heal-wan`, ..."""
    value: str
    """A short text: the partition's shape, or the targets."""
    targets: tuple[str, ...]
    detail: Mapping[str, Any] = field(default_factory=dict)

    def history_fields(self) -> dict[str, Any]:
        """Keyword arguments for `HistoryWriter.record` (besides process, type, f)."""
        return {"value": self.value, "detail": {"targets": list(self.targets), **self.detail}}


def node_names(nodes: Sequence[Any]) -> tuple[str, ...]:
    """The names of `nodes` (anything with a `name`), in order."""
    return tuple(node.name for node in nodes)


def grudge_detail(grudge: Mapping[str, frozenset[str]]) -> dict[str, list[str]]:
    """A grudge as JSON-friendly data, sorted so equal grudges print equally."""
    return {node: sorted(others) for node, others in sorted(grudge.items()) if others}
