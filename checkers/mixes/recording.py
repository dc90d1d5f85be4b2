"""Every planned operation as events: the drain and the cursor readings (which confirm
acks), then the meta event, subscribes, sends, deliveries, acks, failovers, layouts and
the nemesis's operations, each as codes."""

from __future__ import annotations

import numpy as np

from checkers.mixes.base import (
    _ACK_POOL,
    _ACKED,
    _ADMIN,
    _AUDIT,
    _AUDIT_CLUSTER,
    _AUDIT_READER,
    _CONNECT_ERROR,
    _CONSUMER,
    _CUMULATIVE,
    _CURSOR,
    _F,
    _FAIL,
    _FAILOVER_WORKER,
    _HARNESS,
    _INFO,
    _INVOKE,
    _LIVE,
    _MODES,
    _NEMESIS,
    _OBSERVER,
    _OK,
    _TIMED_OUT,
    _TIMEOUT,
    _UNAPPLIED,
    _UNCONFIRMED,
    BROKERS,
    CLUSTERS,
    DRAIN_QUIET,
    MS,
    SNAPSHOT_TIMEOUT,
    SUBSCRIPTIONS,
    TOPIC,
    S,
    _compact,
    _process_code,
    _ragged_arange,
    _retired_ids,
)
from checkers.mixes.deliveries import _Acks, _Deliveries
from checkers.mixes.events import _Events
from checkers.mixes.injections import _Victims
from checkers.mixes.padding import _stray_values
from checkers.mixes.positions import _Positions
from checkers.mixes.readings import _all_readings, _confirm_acks
from checkers.mixes.run import _Run
from checkers.mixes.sends import _Sends
from checkers.mixes.spec import MixSpec
from history.schema import DEFAULT_DUPLICATE_WINDOW_BOUND_MS


def _events(spec: MixSpec, run: _Run, sends: _Sends, positions: _Positions, victims: _Victims,
            deliveries: _Deliveries, acks: _Acks, stalls: int,
            rng: np.random.Generator) -> _Events:
    """The drain, the cursor readings (which confirm acks), then every event."""
    drain_invoked, drain_done = _drain_times(run, sends, deliveries, acks)
    readings = _all_readings(run, sends, positions, deliveries, acks, drain_done, stalls, rng)
    _confirm_acks(acks, readings)
    events = _Events()
    events.add(np.array([20_000]), process=_HARNESS, type=_OK, f=_F["meta"],
               detail=events.detail(_compact({
                   "scenario": "mix", "seed": spec.seed,
                   "duplicate_window_bound_ms": DEFAULT_DUPLICATE_WINDOW_BOUND_MS,
                   "snapshot_timeout_ms": SNAPSHOT_TIMEOUT // MS})))
    _add_subscribes(events, run)
    entries = [_event_entries(sends, positions, victims, c) for c in range(len(CLUSTERS))]
    _add_sends(events, sends, positions, victims, entries)
    _add_deliveries(events, spec, run, sends, deliveries, entries)
    _add_acks(events, run, sends, acks, entries)
    _add_failovers(events, run)
    _add_layouts(events, spec, run, drain_done)
    for reading in readings:
        events.add(reading.time, process=_OBSERVER, type=_OK, f=_F["cursor"],
                   value=events.value(SUBSCRIPTIONS[reading.sub]), topic=0,
                   subscription=reading.sub, cluster=reading.cluster, ledger=reading.ledger,
                   entry=reading.entry, detail=events.details.codes(reading.detail))
    _add_nemesis(events, run)
    events.add(np.array([drain_invoked, drain_done]), process=_HARNESS,
               type=np.array([_INVOKE, _OK]), f=_F["drain"], value=events.value(TOPIC), topic=0)
    return events


def _drain_times(run: _Run, sends: _Sends, deliveries: _Deliveries,
                 acks: _Acks) -> tuple[int, int]:
    """The drain begins after the last send, heal, failover and layout change, and
    completes DRAIN_QUIET after the last delivery, ack and client answer."""
    invoked = 200 * MS + max(int(sends.done.max()), *(op.done for op in run.faults.ops),
                             *run.failover_done.tolist(), *(op.done for op in run.layouts.ops))
    busy = max(int(deliveries.time.max()), int(acks.invoked.max()), int(acks.done.max()))
    return invoked, max(invoked, busy) + DRAIN_QUIET


def _add_subscribes(events: _Events, run: _Run) -> None:
    """`audit`'s reader and each `live` incarnation subscribe (before any send, for the
    first ones: both subscriptions are owed every message); a replacement names the
    consumer it replaces."""
    consumers = run.consumers
    n = len(consumers.slot)
    details = np.array([events.detail(_compact(
        {"mode": _MODES[_LIVE]} if crashed is None else {"mode": _MODES[_LIVE],
                                                         "replaces": crashed}))
        for crashed in consumers.replaces])
    live = {"process": _process_code(_CONSUMER, np.arange(n)), "f": _F["subscribe"],
            "value": events.value(SUBSCRIPTIONS[_LIVE]), "topic": 0, "subscription": _LIVE,
            "cluster": consumers.cluster, "consumer": np.arange(n), "detail": details}
    events.add(consumers.invoked, type=_INVOKE, **live)
    events.add(consumers.start, type=_OK, **live)
    audit = {"process": _process_code(_AUDIT_READER, 0), "f": _F["subscribe"],
             "value": events.value(SUBSCRIPTIONS[_AUDIT]), "topic": 0, "subscription": _AUDIT,
             "cluster": _AUDIT_CLUSTER, "consumer": n,
             "detail": events.detail(_compact({"mode": _MODES[_AUDIT]}))}
    events.add(np.array([90 * MS]), type=_INVOKE, **audit)
    events.add(np.array([95 * MS]), type=_OK, **audit)


def _event_entries(sends: _Sends, positions: _Positions, victims: _Victims,
                   cluster: int) -> np.ndarray:
    """The entries events name in a cluster: where it was written, a `forked-position`
    victim names its partner's."""
    entry = positions.entry[cluster].copy()
    forked = victims.of("forked-position")
    here = sends.home[forked] == cluster
    entry[forked[here]] = positions.entry[cluster][victims.fork_partner[here]]
    return entry


def _add_sends(events: _Events, sends: _Sends, positions: _Positions, victims: _Victims,
               entries: list[np.ndarray]) -> None:
    """A send's completion names where it was written only when `ok`; a `multi-position`
    victim's names a copy past the end of its ledger."""
    m = len(sends.key)
    home = sends.home
    shared = {"process": sends.process, "f": _F["send"], "value": np.arange(m),
              "key": sends.key, "topic": 0, "cluster": home}
    events.add(sends.invoked, type=_INVOKE, **shared)
    entry = np.where(home == 0, entries[0], entries[1])
    multi = victims.of("multi-position")
    entry[multi] = positions.beyond(sends, multi, 0)
    ok = sends.outcome == _OK
    events.add(sends.done, type=sends.outcome, **shared,
               segment=np.where(ok, sends.segment, -1),
               ledger=np.where(ok, _Positions.ledger(sends.segment, home), -1), entry=entry,
               node=np.where(ok, home * BROKERS + sends.segment % BROKERS, -1),
               error=np.select([sends.outcome == _FAIL, sends.outcome == _INFO],
                               [_CONNECT_ERROR, _TIMEOUT], -1))


def _redelivery_counts(deliveries: _Deliveries) -> np.ndarray:
    """How many times each delivery's message came before in its subscription and cluster."""
    order = np.lexsort((deliveries.time, deliveries.cluster, deliveries.sub, deliveries.msg))
    place = np.c_[deliveries.msg, deliveries.sub, deliveries.cluster][order]
    starts = np.flatnonzero(np.r_[True, (np.diff(place, axis=0) != 0).any(axis=1)])
    counts = np.empty(len(order), dtype=np.int64)
    counts[order] = _ragged_arange(np.diff(np.r_[starts, len(order)]))
    return np.where(deliveries.msg < 0, 0, counts)


def _consumer_columns(run: _Run, consumer: np.ndarray) -> dict[str, np.ndarray]:
    """A delivery's or ack's process and consumer name: a `live` incarnation's, or (-1)
    `audit`'s reader, named after all of them."""
    audit = consumer < 0
    return {"process": np.where(audit, _process_code(_AUDIT_READER, 0),
                                _process_code(_CONSUMER, np.maximum(consumer, 0))),
            "consumer": np.where(audit, len(run.consumers.slot), consumer)}


def _add_deliveries(events: _Events, spec: MixSpec, run: _Run, sends: _Sends,
                    deliveries: _Deliveries, entries: list[np.ndarray]) -> None:
    """`recv` observations, with the key, the position in the delivering cluster and how
    often the message came there before; an `unexpected` one names a value nobody sent."""
    msg = np.maximum(deliveries.msg, 0)
    stray = np.flatnonzero(deliveries.msg < 0)
    value = deliveries.msg.copy()
    value[stray] = [events.value(text) for text in _stray_values(spec, len(stray))]
    positioned = deliveries.entry != -2
    entry = np.where(deliveries.cluster == 0, entries[0][msg], entries[1][msg])
    events.add(deliveries.time, **_consumer_columns(run, deliveries.consumer), type=_OK,
               f=_F["recv"], value=value, key=np.where(deliveries.msg >= 0, sends.key[msg], -1),
               topic=0, subscription=deliveries.sub, cluster=deliveries.cluster,
               segment=np.where(positioned, sends.segment[msg], -1),
               ledger=np.where(positioned, _Positions.ledger(sends.segment[msg],
                                                             deliveries.cluster), -1),
               entry=np.where(deliveries.entry >= 0, deliveries.entry, entry),
               redelivery=_redelivery_counts(deliveries))


def _ack_processes(acks: _Acks) -> np.ndarray:
    """A pool of client processes, as the harness's: the k-th ack by invoke time takes
    process k mod W, W the smallest pool in which each process's ack completes before its
    next one; a process is retired (a new id) after each `info`."""
    order = np.argsort(acks.invoked, kind="stable")
    invoked, done = acks.invoked[order], acks.done[order]
    low, high = 1, max(1, len(order))
    while low < high:
        width = (low + high) // 2
        if (done[:-width] < invoked[width:]).all():
            high = width
        else:
            low = width + 1
    info = (acks.outcome[order] == _TIMED_OUT) | (acks.outcome[order] == _UNAPPLIED)
    rows = -(-len(order) // low)
    grid = np.zeros(rows * low, dtype=np.int64)
    grid[:len(order)] = info
    retired = (np.cumsum(grid.reshape(rows, low), axis=0) - grid.reshape(rows, low)).ravel()
    process = np.empty(len(order), dtype=np.int64)
    process[order] = _process_code(_ACK_POOL, _retired_ids(np.arange(len(order)) % low,
                                                           retired[:len(order)]))
    return process


def _add_acks(events: _Events, run: _Run, sends: _Sends, acks: _Acks,
              entries: list[np.ndarray]) -> None:
    """Each ack names the position it was delivered at; a cumulative one says so on both
    its steps, and one a reading confirmed says that on its completion (which comes just
    after the reading)."""
    cumulative = events.detail(_compact({"cumulative": True}))
    confirmed = events.detail(_compact({"confirmed_by": "cursor"}))
    is_cumulative = acks.kind == _CUMULATIVE
    shared = {"process": _ack_processes(acks), "f": _F["ack"], "value": acks.msg, "topic": 0,
              "subscription": acks.sub, "cluster": acks.cluster,
              "consumer": _consumer_columns(run, acks.consumer)["consumer"],
              "ledger": _Positions.ledger(sends.segment[acks.msg], acks.cluster),
              "entry": np.where(acks.cluster == 0, entries[0][acks.msg], entries[1][acks.msg])}
    events.add(acks.invoked, type=_INVOKE, detail=np.where(is_cumulative, cumulative, -1),
               **shared)
    by_cursor = (acks.kind == _CURSOR) & ((acks.outcome == _ACKED) | (acks.outcome == _UNAPPLIED))
    events.add(acks.done, type=np.choose(acks.outcome, [_OK, _FAIL, _INFO, _INFO]),
               prio=by_cursor.astype(np.int8),
               error=np.choose(acks.outcome, [-1, _CONNECT_ERROR, _TIMEOUT, _UNCONFIRMED]),
               detail=np.where(is_cumulative, cumulative,
                               np.where(by_cursor & (acks.outcome == _ACKED), confirmed, -1)),
               **shared)


def _add_failovers(events: _Events, run: _Run) -> None:
    for n, (invoked, done) in enumerate(zip(run.failovers.tolist(), run.failover_done.tolist())):
        source, target = n % 2, 1 - n % 2
        events.add(np.array([invoked, done]), process=_process_code(_FAILOVER_WORKER, 0),
                   type=np.array([_INVOKE, _OK]), f=_F["failover"],
                   value=events.value(SUBSCRIPTIONS[_LIVE]), topic=0, subscription=_LIVE,
                   cluster=target, detail=events.detail(_compact(
                       {"from": CLUSTERS[source], "to": CLUSTERS[target]})))


def _add_layouts(events: _Events, spec: MixSpec, run: _Run, drain_done: int) -> None:
    """The admin's splits and merges; the layout observed at the start, after each change
    and every `layout_interval_s`."""
    layouts = run.layouts
    for op in layouts.ops:
        events.add(np.array([op.invoked, op.done]), process=_ADMIN,
                   type=np.array([_INVOKE, _OK]), f=_F[op.f], value=events.value(op.value),
                   topic=0, epoch=np.array([-1, op.epoch]),
                   detail=np.array([-1, events.detail(op.detail)]))
    every = int(spec.layout_interval_s * S)
    times = np.r_[300 * MS, [op.done + 1 * MS for op in layouts.ops],
                  np.arange(300 * MS + every, drain_done, every)].astype(np.int64)
    epochs = layouts.epoch_at(times)
    documents = np.array([events.detail(text) for text in layouts.documents])
    events.add(times, process=_OBSERVER, type=_OK, f=_F["layout"], topic=0, epoch=epochs,
               detail=documents[epochs])


def _add_nemesis(events: _Events, run: _Run) -> None:
    for op in run.faults.ops:
        events.add(np.array([op.invoked, op.done]), process=_NEMESIS,
                   type=np.array([_INVOKE, _OK]), f=_F[op.f], value=events.value(op.value),
                   detail=np.array([events.detail(op.detail), events.detail(op.done_detail)]))
