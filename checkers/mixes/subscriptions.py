"""What each subscription delivers and acks: `live` round by round through redeliveries,
crashes, failovers and refused acks, then what the failovers' snapshot lag delivers again,
each key's first deliveries in a cluster in send order; `audit`, everything in cluster b in
order."""

from __future__ import annotations

import math

import numpy as np

from checkers.mixes.base import (
    _ACKED,
    _AUDIT,
    _AUDIT_CLUSTER,
    _CUMULATIVE,
    _LIVE,
    _MAX_ROUNDS,
    _REFUSED,
    _REPLICATION_LAG,
    _TIMED_OUT,
    _VOLUNTARY_ROUNDS,
    MS,
    SNAPSHOT_LAG,
    S,
    _between,
    _exponential,
    _ns,
)
from checkers.mixes.deliveries import _Acks, _Deliveries, _no_acks, _plan_acks
from checkers.mixes.injections import _Victims
from checkers.mixes.run import _Run
from checkers.mixes.sends import _Sends
from checkers.mixes.spec import MixSpec


def _first_live_deliveries(spec: MixSpec, run: _Run, sends: _Sends, stored: np.ndarray,
                           rng: np.random.Generator) -> np.ndarray:
    """When each stored message is first delivered in `live`: a little after it was
    stored, once its slot has a consumer, and per key in send order (a key's times are
    handed out sorted, so each still comes after its own send)."""
    wanted = (sends.arrival[stored] + _REPLICATION_LAG
              + _exponential(rng, 1 * MS, 25 * MS, 400 * MS, len(stored)))
    _, times = run.consumers.active(sends.slot(spec.consumers)[stored], wanted)
    key = sends.key[stored]
    first = np.empty_like(times)
    first[np.lexsort((stored, key))] = times[np.lexsort((times, key))]
    return first


def _live_deliveries(spec: MixSpec, run: _Run, sends: _Sends, victims: _Victims,
                     rng: np.random.Generator) -> tuple[_Deliveries, _Acks]:
    """Each stored message's deliveries in `live`, round by round until an ack the broker
    takes: a delivery is redelivered by choice (`redelivery`), because its consumer went
    away before acking it (a crash, a failover), or after a refused ack. A redelivery due
    after its consumer went away comes when the next incarnation subscribes (as the
    unacknowledged messages of a gone consumer do), so that a message crossing a failover
    is first delivered in the new cluster at its consumer's start. Then what the
    failovers' snapshot lag delivers again (`_snapshot_redeliveries`), also at that start;
    `_dispatch_order` lays out what lands at one instant."""
    consumers = run.consumers
    simple = np.zeros(len(sends.key), dtype=bool)
    simple[victims.kept_simple()] = True
    slot_of = sends.slot(spec.consumers)
    msg = np.flatnonzero(sends.written)
    time = _first_live_deliveries(spec, run, sends, msg, rng)
    deliveries: list[_Deliveries] = []
    acks: list[_Acks] = []
    for rounds in range(_MAX_ROUNDS):
        n = len(msg)
        which, time = consumers.active(slot_of[msg], time)
        cluster = consumers.cluster[which]
        deliveries.append(_Deliveries.of(msg, time, _LIVE, cluster, which))
        ack_at = time + _exponential(rng, 100_000, 1 * MS, 50 * MS, n)
        voluntary = (rounds < _VOLUNTARY_ROUNDS) & ~simple[msg]
        again = voluntary & (rng.random(n) < spec.redelivery)
        gone = ~again & (ack_at >= consumers.end[which] - 1 * MS)
        acking = ~again & ~gone
        faulted = voluntary & run.faults.hit(cluster, ack_at) & (
            rng.random(n) < spec.fault_error_share / 2)
        outcome = np.where(faulted, np.where(rng.random(n) < 0.5, _REFUSED, _TIMED_OUT), _ACKED)
        planned = _plan_acks(spec, rng, msg[acking], ack_at[acking], _LIVE, cluster[acking],
                             which[acking], outcome[acking], simple[msg[acking]])
        acks.append(planned)
        answered = np.zeros(n, dtype=np.int64)
        answered[acking] = planned.done
        delay = _between(rng, 300 * MS, 2 * S, n)
        time = np.minimum(np.select([again, gone], [time + delay, consumers.end[which]],
                                    answered + delay), consumers.end[which])
        more = again | gone | (acking & (outcome == _REFUSED))
        msg, time = msg[more], time[more]
        if not len(msg):
            break
    else:
        raise RuntimeError("live deliveries did not settle")
    delivered, acked = deliveries[0].join(*deliveries[1:]), acks[0].join(*acks[1:])
    lagged, lag_acks = _snapshot_redeliveries(spec, run, sends, acked, rng)
    return _dispatch_order(delivered.join(lagged)), acked.join(lag_acks)


def _dispatch_order(deliveries: _Deliveries) -> _Deliveries:
    """The deliveries in time order and, within an instant, in send order (a key's
    messages are one producer's, numbered in send order), as a broker dispatches from the
    subscription's cursor in storage order. It matters at a new incarnation's start, where
    its slot's messages that waited for a consumer, those its predecessor left
    unacknowledged and, after a failover, the snapshot lag's redeliveries all land: there,
    in each cluster, a key's first deliveries must come in send order (`order` compares
    them per cluster). Later first deliveries of a key are of later sends (their times are
    handed out per key in send order, `_first_live_deliveries`), so they come after."""
    return deliveries.take(np.lexsort((deliveries.msg, deliveries.time)))


def _snapshot_redeliveries(spec: MixSpec, run: _Run, sends: _Sends, acks: _Acks,
                           rng: np.random.Generator) -> tuple[_Deliveries, _Acks]:
    """At a failover from A to B, B's copy of the subscription holds what A had
    acknowledged a snapshot earlier, so B delivers again, and acks, what A acknowledged
    in the SNAPSHOT_LAG before (well within `duplicate-window`'s bound). B dispatches them
    from its cursor as each slot's consumer subscribes, with what A's consumers left
    unacknowledged and what waited for a consumer (`_dispatch_order`): not later, where a
    later message of the key might already have come first."""
    deliveries = [_Deliveries.of(np.zeros(0, np.int64), np.zeros(0, np.int64), _LIVE, 0, 0)]
    planned = [_no_acks(spec, rng)]
    for n, failover in enumerate(run.failovers.tolist()):
        source, target = n % 2, 1 - n % 2
        recent = ((acks.cluster == source) & (acks.outcome != _REFUSED)
                  & (acks.invoked > failover - SNAPSHOT_LAG) & (acks.invoked < failover))
        msg = np.unique(acks.msg[recent])
        which, time = run.consumers.active(sends.slot(spec.consumers)[msg],
                                           np.full(len(msg), failover))
        deliveries.append(_Deliveries.of(msg, time, _LIVE, target, which))
        ack_at = time + _exponential(rng, 100_000, 1 * MS, 50 * MS, len(msg))
        acking = ack_at < run.consumers.end[which] - 1 * MS
        count = int(acking.sum())
        planned.append(_plan_acks(spec, rng, msg[acking], ack_at[acking], _LIVE, target,
                                  which[acking], np.full(count, _ACKED),
                                  np.zeros(count, dtype=bool)))
    return deliveries[0].join(*deliveries[1:]), planned[0].join(*planned[1:])


def _audit_deliveries(spec: MixSpec, sends: _Sends,
                      rng: np.random.Generator) -> tuple[_Deliveries, _Acks]:
    """`audit` reads cluster b once, in the order messages arrived there (behind by a lag
    that varies too slowly to reorder them), and acks each, some cumulatively: legal,
    since everything before a message in its segment was delivered before it."""
    stored = np.flatnonzero(sends.written)
    arrival = sends.arrival_in(_AUDIT_CLUSTER)[stored]
    order = np.lexsort((stored, arrival))
    stored, arrival = stored[order], arrival[order]
    time = arrival + _ns(30 * MS + 20 * MS * np.sin(arrival / (60 * S) * 2 * math.pi))
    n = len(stored)
    acks = _plan_acks(spec, rng, stored, time + _exponential(rng, 100_000, 1 * MS, 20 * MS, n),
                      _AUDIT, _AUDIT_CLUSTER, -1, np.full(n, _ACKED), np.zeros(n, dtype=bool))
    cumulative = rng.random(n) < spec.cumulative_share
    acks.kind[cumulative] = _CUMULATIVE
    acks.done[cumulative] = acks.invoked[cumulative] + _exponential(
        rng, 200_000, 1 * MS, 50 * MS, int(cumulative.sum()))
    return _Deliveries.of(stored, time, _AUDIT, _AUDIT_CLUSTER, -1), acks
