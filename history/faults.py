"""The nemesis operations a history records, and how every reader treats them.

A history knows no fault kinds, only nemesis operations (docs/history.md, "nemesis ops"):
`partition` and `heal`, `kill` and `start`, and so on. A checker measuring availability
during a fault, and a report drawing it, read these operations and nothing else, so they
judge a third party's history exactly like ours. Each of starquake's fault kinds
(`nemesis.faults`) records one of these operations; this catalogue is what they share
with the readers: which operation opens an interval, which one closes it, and the colour
it is drawn in.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NemesisOp:
    """One nemesis operation that opens a fault."""

    name: str
    heal: str | None
    """The operation that closes its interval; None when the fault is instantaneous."""
    colour: str
    """How reports draw its interval (a CSS/matplotlib colour)."""
    by_target: bool = False
    """Its closer ends only the interval opened on the same targets (a `start` of one
    broker leaves another killed broker down); else any closer ends it (a network's
    `heal` lifts every partition at once)."""


NEMESIS_OPS: dict[str, NemesisOp] = {op.name: op for op in (
    NemesisOp("partition", "heal", "#f9a825"),
    NemesisOp("cut-wan", "heal-wan", "#8e24aa"),
    NemesisOp("kill", "start", "#e53935", by_target=True),
    NemesisOp("pause", "resume", "#1e88e5", by_target=True),
    NemesisOp("expire-session", None, "#6d4c41"),
    NemesisOp("kill-leader", None, "#c62828"),
    NemesisOp("unlink-replication", "relink-replication", "#00897b", by_target=True),
)}

HEAL_OPS = frozenset(op.heal for op in NEMESIS_OPS.values() if op.heal is not None)
"""Operations that close an interval rather than open one."""

UNKNOWN_OP_COLOUR = "#757575"
"""A nemesis operation outside the catalogue (a third party's own) is still drawn."""


def fault_colour(f: str) -> str:
    """The colour of operation `f`'s interval."""
    op = NEMESIS_OPS.get(f)
    return op.colour if op is not None else UNKNOWN_OP_COLOUR


def closed_by_target(f: str) -> bool:
    """Whether `f`'s interval is closed only by a closer naming its targets."""
    op = NEMESIS_OPS.get(f)
    return op is not None and op.by_target


def heal_of(f: str) -> str | None:
    """The operation closing `f`'s interval; None for an instantaneous fault (or one the
    catalogue does not know, which is drawn as an instant)."""
    op = NEMESIS_OPS.get(f)
    return op.heal if op is not None else None
