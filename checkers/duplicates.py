"""Which failovers between clusters `duplicate-window` judges (PIP-33 bounds their
redelivery by about one snapshot interval); the acks it judged them against are counted
with the statistics (`checkers.aggregates`). Their redeliveries are measured in the
per-value pass (`checkers.failover_windows`); within a cluster, `duplicate` is decided
with the other per-value checks (`checkers.delivery`).

PIP-33 takes a snapshot only while every cluster is connected, and promises nothing of a
failover while they are not: the subscription's position in the other cluster stays
where the last completed snapshot put it, however long ago. A failover invoked during a
replication outage, or less than `RECOVERY_MS` after its end completed, is therefore not
judged: it is *excused*, and counted as such. The outages are a `cut-wan` (after its
heal the replicators reconnect with backoff and replay what the cut held back before a
snapshot can complete) and an `unlink-replication` (a cluster that stops replicating to
another cannot send its snapshot answers back; after the relink a request lost meanwhile
must time out before the next is asked). Their duplicates still cannot be losses: `lost`
judges those runs as any other."""

from __future__ import annotations

from checkers.frames import HistoryFrames, SmallFact, closing_op
from history.faults import heal_of

REPLICATION_OUTAGES = ("cut-wan", "unlink-replication")
"""The nemesis operations that keep snapshots from completing until they end."""
RECOVERY_MS = 10_000
"""After a replication outage ends, how long failovers stay excused (module docstring)."""
_MS = 1_000_000


def replication_outages(frames: HistoryFrames) -> dict[str, list[tuple[int, int]]]:
    """Per run: (from, until) in nanoseconds of each replication outage, from its invoke to
    `RECOVERY_MS` past the completion of the operation that ended it (its own end or a
    general `heal`); an outage never ended lasts to the end of the history."""
    outages: dict[str, list[tuple[int, int]]] = {}
    for n, op in enumerate(frames.nemesis):
        if op.f not in REPLICATION_OUTAGES:
            continue
        healed = closing_op(frames.nemesis, n, {heal_of(op.f), "heal"})
        until = ((healed.done_time or healed.time) + RECOVERY_MS * _MS
                 if healed is not None else 2 ** 63 - 1)
        outages.setdefault(op.run, []).append((op.time, until))
    return outages


def judged_failovers(frames: HistoryFrames) -> tuple[list[SmallFact], list[SmallFact]]:
    """(judged, excused): the failovers `duplicate-window` judges, and those invoked during
    a replication outage or the recovery from it (module docstring)."""
    outages = replication_outages(frames)
    judged: list[SmallFact] = []
    excused: list[SmallFact] = []
    for failover in frames.failover_ops:
        cut = any(start <= failover.time <= until
                  for start, until in outages.get(failover.run, []))
        (excused if cut else judged).append(failover)
    return judged, excused
