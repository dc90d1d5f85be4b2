"""The `cursor` readings: what each subscription's cursor shows in each cluster at each
poll (the mark-delete position, the individually deleted ranges, the backlog), the
injected stalls, and the acks the readings confirm."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from checkers.mixes.base import (
    _APPLY,
    _AUDIT,
    _AUDIT_CLUSTER,
    _CUMULATIVE,
    _LIVE,
    _NEVER,
    _STALL_LEDGER,
    _UNAPPLIED,
    CLUSTERS,
    CURSOR_POLL,
    MS,
    SNAPSHOT_LAG,
    S,
    _between,
    _compact,
    _ragged_arange,
    _text,
)
from checkers.mixes.deliveries import _Acks, _Deliveries
from checkers.mixes.positions import _Positions
from checkers.mixes.run import _Run
from checkers.mixes.sends import _Sends
from checkers.synthetic import STALL_S


@dataclass
class _Scope:
    """One subscription's cursor in one cluster, per message."""

    sub: int
    cluster: int
    applied: np.ndarray
    """When the broker held it acknowledged (_NEVER: never)."""
    delivered: np.ndarray
    """Its first delivery here (_NEVER: none)."""
    last_ack: np.ndarray
    """Its last ack invoked here (_NEVER: none): until then a delivered message is out
    at a consumer, unacknowledged."""


def _scopes(sends: _Sends, positions: _Positions, deliveries: _Deliveries,
            acks: _Acks) -> list[_Scope]:
    """`live` in both clusters (each cluster's copy of the subscription also takes what the
    other acknowledged, a snapshot later) and `audit` in b (where a cumulative ack holds
    everything before it in its segment)."""
    m = len(sends.key)

    def per_message(rows: np.ndarray, times: np.ndarray, reduce: np.ufunc,
                    start: int) -> np.ndarray:
        values = np.full(m, start, dtype=np.int64)
        reduce.at(values, rows, times)
        return values

    def own(sub: int, cluster: int) -> _Scope:
        here = (acks.sub == sub) & (acks.cluster == cluster)
        held = here & acks.applied
        seen = (deliveries.sub == sub) & (deliveries.cluster == cluster) & (deliveries.msg >= 0)
        last = per_message(acks.msg[here], acks.invoked[here], np.maximum, -1)
        return _Scope(sub, cluster,
                      per_message(acks.msg[held], acks.invoked[held] + _APPLY, np.minimum, _NEVER),
                      per_message(deliveries.msg[seen], deliveries.time[seen], np.minimum, _NEVER),
                      np.where(last < 0, _NEVER, last))

    live = [own(_LIVE, cluster) for cluster in range(len(CLUSTERS))]
    for scope, other in zip(live, live[::-1]):
        replicated = np.where(other.applied == _NEVER, _NEVER, other.applied + SNAPSHOT_LAG)
        scope.applied = np.minimum(scope.applied, replicated)
    audit = own(_AUDIT, _AUDIT_CLUSTER)
    audit.applied = _with_cumulative(sends, positions, acks, audit.applied)
    return [*live, audit]


def _with_cumulative(sends: _Sends, positions: _Positions, acks: _Acks,
                     applied: np.ndarray) -> np.ndarray:
    """`audit`'s held times, each lowered to the earliest cumulative ack at or after it in
    its ledger."""
    cumulative = np.full(len(sends.key), _NEVER, dtype=np.int64)
    chosen = (acks.sub == _AUDIT) & (acks.kind == _CUMULATIVE)
    cumulative[acks.msg[chosen]] = acks.invoked[chosen] + _APPLY
    held = applied.copy()
    for ledger in positions.ledger_sizes[_AUDIT_CLUSTER]:
        backwards = positions.holders(ledger, _AUDIT_CLUSTER)[::-1]
        held[backwards] = np.minimum(held[backwards],
                                     np.minimum.accumulate(cumulative[backwards]))
    return held


@dataclass
class _Readings:
    """`cursor` observations of one subscription in one cluster."""

    sub: int
    cluster: int
    time: np.ndarray
    ledger: np.ndarray
    entry: np.ndarray
    """The mark-delete position."""
    detail: pa.Array
    confirms: bool = True
    """Acks may complete on it (not on an injected stall's)."""


def _reading_times(start: int, end: int, rng: np.random.Generator, offset: int) -> np.ndarray:
    count = max(0, (end - start - offset) // CURSOR_POLL)
    grid = start + offset + CURSOR_POLL * np.arange(count, dtype=np.int64)
    return np.asarray(grid + _between(rng, 0, 5 * MS, count))


def _read_cursor(scope: _Scope, times: np.ndarray, sends: _Sends, positions: _Positions,
                 connected: np.ndarray) -> _Readings:
    """Readings at these times. A message's position is a hole from its arrival until the
    broker holds it acknowledged; the mark-delete position ends the held run at the start
    of the lowest ledger that has a hole or will still be written, and the individually
    deleted ranges are the held runs above it."""
    cluster = scope.cluster
    stored = positions.by_entry[cluster]
    ledger_ids = np.array(sorted(positions.ledger_sizes[cluster]), dtype=np.int64)
    sizes = np.array([positions.ledger_sizes[cluster][int(x)] for x in ledger_ids])
    rank = np.searchsorted(ledger_ids, positions.ledger_by_entry[cluster])
    arrival = sends.arrival_in(cluster)[stored]
    arrived = np.stack([np.searchsorted(arrival[rank == r], times, side="left")
                        for r in range(len(ledger_ids))])
    first = np.searchsorted(times, arrival, side="right")
    counts = np.maximum(np.searchsorted(times, scope.applied[stored], side="right") - first, 0)
    holder = np.repeat(np.arange(len(stored)), counts)
    hole_k = np.repeat(first, counts) + _ragged_arange(counts)
    msg = stored[holder]
    out = (scope.delivered[msg] < times[hole_k]) & (times[hole_k] <= scope.last_ack[msg])
    n, ledgers = len(times), len(ledger_ids)
    lowest = np.full(n, ledgers)
    np.minimum.at(lowest, hole_k, rank[holder])
    still_written = arrived < sizes[:, None]
    lowest = np.minimum(lowest, np.where(still_written.any(axis=0),
                                         still_written.argmax(axis=0), ledgers))
    marks = _Marks.of(hole_k, rank[holder], positions.entry[cluster][msg], arrived, lowest)
    mark_entry = np.where(lowest == ledgers, sizes[-1] - 1, -1)
    mark_entry[marks.mark_k] = marks.mark_next - 1
    detail = pc.binary_join_element_wise(
        '{"individually_deleted":[', marks.ranges_text(ledger_ids, n), '],"backlog":',
        _text(np.bincount(hole_k, minlength=n)), ',"consumers":', _text(connected),
        ',"unacked":', _text(np.bincount(hole_k[out], minlength=n)), "}", "")
    return _Readings(scope.sub, cluster, times, ledger_ids[np.minimum(lowest, ledgers - 1)],
                     mark_entry, detail)


@dataclass
class _Marks:
    """The cuts of every reading's ledgers, sorted by reading, ledger and entry: its holes,
    and -1 and the arrived count around each ledger at or above the lowest one. Between
    two cuts lies a held run; the first run of the lowest ledger is the mark-delete
    position's, the others are ranges."""

    k: np.ndarray
    ledger: np.ndarray
    entry: np.ndarray
    same: np.ndarray
    """Whether each cut and the next are of one reading and ledger."""
    below_mark: np.ndarray
    """Whether each cut starts the mark-delete position's run."""

    @classmethod
    def of(cls, hole_k: np.ndarray, hole_ledger: np.ndarray, hole_entry: np.ndarray,
           arrived: np.ndarray, lowest: np.ndarray) -> _Marks:
        ranks = np.arange(len(arrived))[:, None]
        edge_l, edge_k = np.nonzero(((ranks > lowest) & (arrived > 0)) | (ranks == lowest))
        k = np.concatenate([hole_k, edge_k, edge_k])
        ledger = np.concatenate([hole_ledger, edge_l, edge_l])
        entry = np.concatenate([hole_entry, np.full(len(edge_k), -1), arrived[edge_l, edge_k]])
        order = np.lexsort((entry, ledger, k))
        k, ledger, entry = k[order], ledger[order], entry[order]
        same = (k[1:] == k[:-1]) & (ledger[1:] == ledger[:-1])
        below_mark = same & (entry[:-1] == -1) & (ledger[:-1] == lowest[k[:-1]])
        return cls(k, ledger, entry, same, below_mark)

    @property
    def mark_k(self) -> np.ndarray:
        return np.asarray(self.k[:-1][self.below_mark])

    @property
    def mark_next(self) -> np.ndarray:
        """The cut that ends the mark-delete position's run: its first hole, or its end."""
        return np.asarray(self.entry[1:][self.below_mark])

    def ranges_text(self, ledger_ids: np.ndarray, readings: int) -> pa.Array:
        """Per reading, its ranges as JSON array items (`["L:a","L:b"]`, joined)."""
        ranged = self.same & (self.entry[1:] - self.entry[:-1] > 1) & ~self.below_mark
        ledger = _text(ledger_ids[self.ledger[:-1][ranged]])
        texts = pc.binary_join_element_wise(
            '["', ledger, ":", _text(self.entry[:-1][ranged]), '","', ledger, ":",
            _text(self.entry[1:][ranged] - 1), '"]', "")
        per_reading = np.bincount(self.k[:-1][ranged], minlength=readings)
        offsets = pa.array(np.r_[0, np.cumsum(per_reading)].astype(np.int32))
        return pc.binary_join(pa.ListArray.from_arrays(offsets, texts), ",")


def _all_readings(run: _Run, sends: _Sends, positions: _Positions, deliveries: _Deliveries,
                  acks: _Acks, drain_done: int, stalls: int,
                  rng: np.random.Generator) -> list[_Readings]:
    """Periodic readings of every subscription in every cluster it is read in until the
    drain completes; the injected stalls (`live` in its last cluster: two readings
    STALL_S apart, each at a cursor of its own); then a last reading of each."""
    final = drain_done + 10 * MS + stalls * (STALL_S * S + 20 * MS)
    found = []
    for n, scope in enumerate(_scopes(sends, positions, deliveries, acks)):
        times = np.r_[_reading_times(400 * MS, drain_done, rng, n * 2 * MS), final + n * MS]
        connected = (np.ones(len(times), dtype=np.int64) if scope.sub == _AUDIT
                     else run.consumers.connected(scope.cluster, times))
        found.append(_read_cursor(scope, times, sends, positions, connected))
    if stalls:
        starts = drain_done + 10 * MS + np.arange(stalls) * (STALL_S * S + 20 * MS)
        detail = _compact({"individually_deleted": [], "backlog": 5, "consumers": 1,
                           "unacked": 0})
        found.append(_Readings(_LIVE, run.final_cluster,
                               np.ravel(np.c_[starts, starts + STALL_S * S]),
                               np.full(2 * stalls, _STALL_LEDGER),
                               np.repeat(np.arange(stalls), 2),
                               pa.array([detail] * (2 * stalls)), confirms=False))
    return found


def _confirm_acks(acks: _Acks, readings: list[_Readings]) -> None:
    """An ack left to the cursor completes at the first reading of its subscription and
    cluster that began after the broker held it; the unapplied one, `info`, at the last."""
    for reading in readings:
        if not reading.confirms:
            continue
        mine = (acks.sub == reading.sub) & (acks.cluster == reading.cluster) & (acks.done < 0)
        at = np.searchsorted(reading.time, acks.invoked[mine] + _APPLY, side="right")
        at[acks.outcome[mine] == _UNAPPLIED] = len(reading.time) - 1
        acks.done[mine] = reading.time[at]
