"""Which failovers between clusters `duplicate-window` judges (PIP-33 bounds their
redelivery by about one snapshot interval); the acks it judged them against are counted
with the statistics (`checkers.aggregates`). Their redeliveries are measured in the
per-value pass (`checkers.failover_windows`); within a cluster, `duplicate` is decided
with the other per-value checks (`checkers.delivery`).

PIP-33 takes a snapshot only while every cluster is connected, and promises nothing of a
failover while they are not: the subscription's position in the other cluster stays
where the last completed snapshot put it, however long ago. A failover invoked during a
`cut-wan`, or less than `WAN_RECOVERY_MS` after its heal completed (the replicators
reconnect with backoff, replay what the cut held back, and only then can a snapshot
complete), is therefore not judged: it is *excused*, and counted as such. Its duplicates
still cannot be losses: `lost` judges those runs as any other."""

from __future__ import annotations

from checkers.frames import HistoryFrames, SmallFact, closing_op
from history.faults import heal_of

WAN_CUT = "cut-wan"
WAN_RECOVERY_MS = 10_000
"""After a WAN cut heals, how long failovers stay excused (module docstring)."""
_MS = 1_000_000


def wan_outages(frames: HistoryFrames) -> dict[str, list[tuple[int, int]]]:
    """Per run: (from, until) in nanoseconds of each WAN cut, from its invoke to
    `WAN_RECOVERY_MS` past the completion of the operation that healed it (its own heal
    or a general `heal`); a cut never healed lasts to the end of the history."""
    outages: dict[str, list[tuple[int, int]]] = {}
    heals = {heal_of(WAN_CUT), "heal"}
    for n, op in enumerate(frames.nemesis):
        if op.f != WAN_CUT:
            continue
        healed = closing_op(frames.nemesis, n, heals)
        until = ((healed.done_time or healed.time) + WAN_RECOVERY_MS * _MS
                 if healed is not None else 2 ** 63 - 1)
        outages.setdefault(op.run, []).append((op.time, until))
    return outages


def judged_failovers(frames: HistoryFrames) -> tuple[list[SmallFact], list[SmallFact]]:
    """(judged, excused): the failovers `duplicate-window` judges, and those invoked while
    the clusters were cut apart or recovering from it (module docstring)."""
    outages = wan_outages(frames)
    judged: list[SmallFact] = []
    excused: list[SmallFact] = []
    for failover in frames.failover_ops:
        cut = any(start <= failover.time <= until
                  for start, until in outages.get(failover.run, []))
        (excused if cut else judged).append(failover)
    return judged, excused
