"""Which failovers between clusters `duplicate-window` judges (PIP-33 bounds their
redelivery by about one snapshot interval); the acks it judged them against are counted
with the statistics (`checkers.aggregates`). Their redeliveries are measured in the
per-value pass (`checkers.failover_windows`); within a cluster, `duplicate` is decided
with the other per-value checks (`checkers.delivery`).

PIP-33 takes a snapshot only while every cluster is connected, and promises nothing of a
failover while they are not: the subscription's position in the other cluster stays where
the last completed snapshot put it, however long ago. A failover invoked during a
replication outage, or in the recovery after its end completed, is therefore not judged:
it is *excused*, and counted as such. The outages are a `cut-wan` and an
`unlink-replication` (a cluster that stops replicating to another cannot send its
snapshot answers back), and anything that can stop or move a topic's owner in a cluster
(`kill`, `pause`, `partition`, `expire-session`): the topic's snapshots stop until it is
served again, and a snapshot in flight is lost with its owner. Two things take time after
one ends: the replicators reconnect with backoff and replay what the outage held back
(`RECOVERY_MS` covers it), and a snapshot whose requests or answers the outage lost holds
up the next until it times out, at most the run's snapshot timeout after the outage ended
(its `meta` `snapshot_timeout_ms`, Pulsar's 30 s when a history has none), after which
the next one needs a moment (`AFTER_TIMEOUT_MS`). The recovery is the longer of the two.
Duplicates in an excused failover still cannot be losses: `lost` judges those runs as any
other, but for what an unlink kept from a cluster altogether (`checkers.unreplicated`)."""

from __future__ import annotations

from checkers.frames import HistoryFrames, SmallFact, ending_op

REPLICATION_OUTAGES = ("cut-wan", "unlink-replication", "kill", "pause", "partition",
                       "expire-session")
"""The nemesis operations that keep snapshots from completing until they end (an
instantaneous one, `expire-session`, until the recovery after it)."""
RECOVERY_MS = 10_000
"""After a replication outage ends, how long the replicators' reconnection and replay may
keep snapshots from completing (module docstring)."""
SNAPSHOT_TIMEOUT_MS = 30_000
"""A run's snapshot timeout when its `meta` does not say: Pulsar's default."""
AFTER_TIMEOUT_MS = 5_000
"""From a lost snapshot's timeout to the next one's completion: the next snapshot interval
(1 s by default) and a round trip between the clusters, with room to spare."""
_MS = 1_000_000


def recovery_ms(frames: HistoryFrames, run: str) -> float:
    """How long after a replication outage of `run` ends its failovers stay excused."""
    timeout = frames.meta_number(run, "snapshot_timeout_ms")
    return max(RECOVERY_MS,
               (SNAPSHOT_TIMEOUT_MS if timeout is None else timeout) + AFTER_TIMEOUT_MS)


def replication_outages(frames: HistoryFrames) -> dict[str, list[tuple[int, int]]]:
    """Per run: (from, until) in nanoseconds of each replication outage, from its invoke to
    the run's `recovery_ms` past the completion of the operation that ended it (its own
    end or a general `heal`); an outage never ended lasts to the end of the history."""
    outages: dict[str, list[tuple[int, int]]] = {}
    for n, op in enumerate(frames.nemesis):
        if op.f not in REPLICATION_OUTAGES:
            continue
        healed = ending_op(frames.nemesis, n)
        until = ((healed.done_time or healed.time) + int(recovery_ms(frames, op.run) * _MS)
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
