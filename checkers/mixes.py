"""Realistic synthetic histories ("mixes") with anomalies of exactly known counts, for the
checker benchmark.

`checkers.synthetic` writes the kindest legal history: one consumer, each message's events
adjacent, nothing redelivered, no fault, no failover. The checkers take about 1.6 times as
long on a real history of the same size, so a benchmark on it promises too much. A mix
models a long faulted run instead, at any size:

- keyed producers in two geo-replicated clusters, `a` and `b`, write one scalable topic
  whose segments are split and merged over the run; every write to a parent precedes
  every write to its children, and a `layout` is observed at every epoch and periodically;
- the `key_shared` subscription `live` is read by several consumers at once in one cluster
  at a time. Deliveries are redelivered, consumers crash and are replaced (the replacement
  gets what the crashed one left unacknowledged), and `live` fails over between the
  clusters, where the other cluster redelivers what was acknowledged in the last snapshot
  interval (well within `duplicate-window`'s bound);
- the `failover` subscription `audit` reads everything in cluster b, in order, and
  acknowledges some messages cumulatively;
- acks run on a pool of client processes, as the harness's cursor observer runs them:
  most complete `ok` when a periodic `cursor` reading covers their position, the others
  with the client's answer;
- the nemesis partitions, kills, pauses and cuts the WAN; in a fault's cluster some sends
  complete `fail` (never written) or `info` (written or not; the producer goes on under a
  new process id), and some acks `fail` (and are redelivered) or `info`;
- a drain after the last heal, then a last `cursor` reading of every subscription.

Every process's operations interleave with everyone else's in time. Each message's story
is planned as arrays of times (numpy), and the events are laid out and sorted once at the
end, so twenty million events take well under a minute.

`inject` adds anomalies of `checkers.synthetic.INJECTABLE`, each unit on messages no other
injection touches, chosen where nothing else happens to them (no failover or change of
consumer near, delivered once), so that it adds exactly one counted unit to its checker
and nothing to any other.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from checkers.synthetic import INJECTABLE, STALL_S
from history.faults import NEMESIS_OPS, heal_of
from history.schema import (
    ARROW_SCHEMA,
    DEFAULT_DUPLICATE_WINDOW_BOUND_MS,
    DEFAULT_STALLED_SUBSCRIPTION_BOUND_MS,
    HASH_SPACE,
    key_hash,
)

MS = 1_000_000
S = 1_000_000_000
TOPIC = "topic://starquake/mix/orders"
CLUSTERS = ("a", "b")
SUBSCRIPTIONS = ("live", "audit")
_LIVE, _AUDIT = range(len(SUBSCRIPTIONS))
_AUDIT_CLUSTER = 1
_MODES = ("key_shared", "failover")
BROKERS = 3
"""Brokers per cluster, the nemesis's targets."""

MIN_DURATION_S = 120
"""The shortest run: a small history keeps every feature (failovers, crashes, faults)."""
MIN_FAILOVER_SPACING_S = 10
"""Failovers closer than this could redeliver one value across two of them."""
CURSOR_POLL = 750 * MS
"""How often the observer reads the cursors (the harness's `POLL_S`)."""
SNAPSHOT_LAG = 1000 * MS
"""How far a replicated subscription's cursor lags the other cluster's: what was acked in
that last interval before a failover is delivered again after it."""
DRAIN_QUIET = 3 * S
"""The drain completes this long after the last delivery or ack."""
assert SNAPSHOT_LAG < DEFAULT_DUPLICATE_WINDOW_BOUND_MS * MS
assert 2 * DRAIN_QUIET < DEFAULT_STALLED_SUBSCRIPTION_BOUND_MS * MS

_SENDS_START = 1 * S
_REPLICATION_LAG = 40 * MS
_APPLY = 1 * MS
"""From an ack's invoke to the broker holding it (the cursor's view)."""
_QUIET_BEFORE, _QUIET_AFTER = 5 * S, 5 * S
"""An injected message is sent with no failover and no change of its consumer this long
before and after: its story (under 3 s, for `order`) and a snapshot lag after it."""
_VOLUNTARY_ROUNDS = 8
"""Deliveries after which a message is no longer redelivered by choice, nor its ack failed."""
_MAX_ROUNDS = 64
_LEDGER_BASE = 100
_STALL_LEDGER = 1
"""Ledger of the cursor positions of injected stalls, which no message uses."""
_FOREVER = 1 << 45
_SLOT_SPAN = 1 << 46
_NEVER = np.iinfo(np.int64).max

_INVOKE, _OK, _FAIL, _INFO = range(4)
_TYPE_NAMES = ("invoke", "ok", "fail", "info")
_F_NAMES = ("meta", "subscribe", "send", "recv", "ack", "failover", "split", "merge", "layout",
            "cursor", "drain", *NEMESIS_OPS, *sorted({heal_of(f) or f for f in NEMESIS_OPS}
                                                     - set(NEMESIS_OPS)))
_F = {name: code for code, name in enumerate(_F_NAMES)}
_ERRORS = ("ConnectError", "Timeout", "unconfirmed")
_CONNECT_ERROR, _TIMEOUT, _UNCONFIRMED = range(len(_ERRORS))
_RESERVED = ("nemesis", "admin", "observer", "harness")
_NEMESIS, _ADMIN, _OBSERVER, _HARNESS = (-1 - n for n in range(len(_RESERVED)))
_PRODUCER, _CONSUMER, _FAILOVER_WORKER, _ACK_POOL, _AUDIT_READER = range(1, 6)
_KIND_SHIFT = 40
"""A client process's code is its kind, shifted by this, then its id (`_process_code`)."""

# Ack outcomes and kinds.
_ACKED, _REFUSED, _TIMED_OUT, _UNAPPLIED = range(4)
"""ok; fail (not applied: the message comes again); info after a timeout (applied); info
`unconfirmed` (never applied, the injected `ack-unapplied`)."""
_CLIENT, _CURSOR, _CUMULATIVE = range(3)


@dataclass(frozen=True)
class MixSpec:
    """A run to generate. The counts of crashes, failovers, splits and merges are the run's
    story, whatever its size; `events` sets the volume and, with `rate`, the run's length."""

    events: int = 20_000_000
    """About how many events the history has (the number of messages is sized to it)."""
    seed: int = 0
    """Seeds every random choice: one spec and one `inject` give one history."""
    producers: int = 8
    """Producer workers; even ones write in cluster a, odd ones in cluster b."""
    consumers: int = 6
    """Consumers of `live` connected at once, each owning a share of the keys."""
    keys_per_producer: int = 64
    """Keys each producer writes; a key belongs to one producer, so its sends are ordered."""
    rate: float = 1500.0
    """Messages per second over all producers; a run is never shorter than MIN_DURATION_S,
    so small histories have a lower rate."""
    redelivery: float = 0.05
    """Share of `live` deliveries followed by a redelivery of the message, before any ack."""
    crashes: int = 12
    """Consumer crashes, each followed by a replacement (fewer when the run cannot space
    them 5 s from each other and from failovers)."""
    failovers: int = 4
    """Failovers of `live` between the clusters: a to b, b to a, ..."""
    splits: int = 6
    """Segment splits over the run (the topic starts with one segment)."""
    merges: int = 2
    """Merges of two adjacent segments over the run."""
    faults_per_minute: float = 2.0
    """Fault density: nemesis faults (partition, kill, pause, cut-wan and instants) per
    minute of the run."""
    fault_error_share: float = 0.3
    """Share of the sends invoked in a fault's cluster during it that complete `fail`, or
    `info` for each producer's first (it then waits out a timeout); half as many of its
    acks complete `fail` or `info`."""
    cursor_ack_share: float = 0.7
    """Share of individual acks confirmed by a cursor reading rather than the client."""
    cumulative_share: float = 0.1
    """Share of `audit`'s acks that are cumulative."""
    layout_interval_s: float = 4.0
    """How often the layout is observed besides each epoch (large `detail`s)."""


MIXES: dict[str, MixSpec] = {
    "default": MixSpec(),
    "many-keys": MixSpec(keys_per_producer=25_000),
    "heavy-redelivery": MixSpec(redelivery=0.35, consumers=12, crashes=40),
}
"""The benchmark's mixes at 20 million events: a long faulted run; the same with 200,000
keys; and one where a third of the deliveries are redelivered."""


def scaled(spec: MixSpec, events: int) -> MixSpec:
    """The same run with about `events` events: the same story, more or fewer messages."""
    return replace(spec, events=events)


def generate(spec: MixSpec, inject: dict[str, int]) -> pa.Table:
    """The history as an Arrow table (`history.schema.ARROW_SCHEMA`), index and time in
    order; `inject` maps anomalies of INJECTABLE to how many counted units to add."""
    _check_injections(inject)
    events, run, sends = _planned_events(spec, inject)
    return _table(events, run, sends)


def write_parquet(spec: MixSpec, inject: dict[str, int], path: Path) -> int:
    """Write the history as Parquet; the number of events."""
    table = generate(spec, inject)
    pq.write_table(table, path, row_group_size=1 << 20)
    return int(table.num_rows)


def _planned_events(spec: MixSpec, inject: dict[str, int]) -> tuple[_Events, _Run, _Sends]:
    """Every event as codes; the run and the sends name them. The plan's other arrays are
    freed on return, before the table takes their room."""
    rng = np.random.default_rng(spec.seed)
    run = _plan_run(spec, rng)
    sends = _plan_sends(spec, run, rng)
    victims = _Victims.choose(spec, run, sends, inject, rng)
    positions = _Positions.of(sends)
    victims.pick_fork_partners(sends, positions)
    live, live_acks = _live_deliveries(spec, run, sends, victims, rng)
    audit, audit_acks = _audit_deliveries(spec, sends, rng)
    deliveries, acks = _inject_deliveries(sends, positions, victims, live.join(audit),
                                          live_acks.join(audit_acks), rng)
    events = _events(spec, run, sends, positions, victims, deliveries, acks,
                     inject.get("stalled-subscription", 0), rng)
    return events, run, sends


def _check_injections(inject: dict[str, int]) -> None:
    unknown = set(inject) - set(INJECTABLE)
    if unknown:
        raise ValueError(f"cannot inject {sorted(unknown)}; injectable: {', '.join(INJECTABLE)}")
    negative = sorted(kind for kind, count in inject.items() if count < 0)
    if negative:
        raise ValueError(f"negative injection counts: {negative}")


# --- small array helpers --------------------------------------------------------------------


def _ragged_arange(counts: np.ndarray) -> np.ndarray:
    """0 .. n-1 for each n of `counts`, concatenated."""
    ends = np.cumsum(counts)
    total = int(ends[-1]) if len(ends) else 0
    return np.asarray(np.arange(total) - np.repeat(ends - counts, counts))


def _exclusive_cumsum(values: np.ndarray, group_first: np.ndarray) -> np.ndarray:
    """Per element, the sum of the values before it in its group (groups contiguous;
    `group_first` is each element's group's first index)."""
    before = np.cumsum(values) - values
    return np.asarray(before - before[group_first])


def _ns(values: np.ndarray | float) -> np.ndarray:
    return np.asarray(np.round(values), dtype=np.int64)


def _between(rng: np.random.Generator, low: int, high: int, n: int) -> np.ndarray:
    return rng.integers(low, high, n, dtype=np.int64)


def _exponential(rng: np.random.Generator, least: int, mean: int, most: int,
                 n: int) -> np.ndarray:
    """Latencies: at least `least`, then exponential, capped at `most` (ns)."""
    return np.asarray(np.minimum(least + _ns(rng.exponential(mean, n)), most))


def _process_code(kind: int, ids: np.ndarray | int) -> np.ndarray:
    """A client process before it has a name: its kind (a producer, a consumer, a pooled
    ack process, ...) and its id among them (ids of one kind are dense from 0)."""
    return (np.int64(kind) << _KIND_SHIFT) | np.asarray(ids, np.int64)


def _retired_ids(worker: np.ndarray, retired: np.ndarray) -> np.ndarray:
    """Dense ids for the processes of workers that take a new id after each `info`:
    worker w's `retired`-th id."""
    ids_per_worker = np.zeros(int(worker.max(initial=0)) + 1, dtype=np.int64)
    np.maximum.at(ids_per_worker, worker, retired + 1)
    return np.asarray((np.cumsum(ids_per_worker) - ids_per_worker)[worker] + retired)


# --- the run's schedule ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Segment:
    id: int
    start: int
    end: int
    parents: tuple[int, ...]
    created: int
    """The epoch that created it."""


@dataclass(frozen=True)
class _AdminOp:
    f: str
    value: str
    invoked: int
    done: int
    epoch: int
    detail: str


@dataclass
class _Layouts:
    """The topic's segments over time. Epoch e's layout holds from `since[e]` (the ok of
    the split or merge that made it): a send invoked then goes to its active segments."""

    segments: list[_Segment]
    since: np.ndarray
    active: list[np.ndarray]
    """Per epoch, its active segments by range start."""
    sealed: dict[int, int]
    """Segment -> the epoch that sealed it."""
    ops: list[_AdminOp]
    documents: list[str]
    """Per epoch, the layout as the metadata store holds it (JSON)."""

    def epoch_at(self, times: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.since, times, side="right") - 1

    def route(self, hashes: np.ndarray, times: np.ndarray) -> np.ndarray:
        """The segment whose range holds each hash in the layout of each time."""
        epochs = self.epoch_at(times)
        segments = np.empty(len(hashes), dtype=np.int64)
        for epoch, active in enumerate(self.active):
            chosen = epochs == epoch
            starts = np.array([self.segments[s].start for s in active])
            segments[chosen] = active[np.searchsorted(starts, hashes[chosen], side="right") - 1]
        return segments

    def ranges(self) -> tuple[np.ndarray, np.ndarray]:
        return (np.array([s.start for s in self.segments]),
                np.array([s.end for s in self.segments]))


def _plan_layouts(spec: MixSpec, rng: np.random.Generator, duration: int) -> _Layouts:
    """Splits and merges spread over the run; a merge joins two adjacent segments, so it
    waits for a split to make them."""
    segments = [_Segment(0, 0, HASH_SPACE - 1, (), 0)]
    active = [0]
    sealed: dict[int, int] = {}
    since, actives, ops = [0], [np.array(active)], []
    changes = spec.splits + spec.merges
    splits_left, merges_left = spec.splits, spec.merges
    for n in range(changes):
        epoch = n + 1
        invoked = int(_SENDS_START + duration * (0.1 + 0.8 * (n + rng.uniform(0.25, 0.75))
                                                    / changes))
        done = invoked + int(rng.integers(20 * MS, 200 * MS))
        merge = (len(active) > 1 and merges_left > 0
                 and (splits_left == 0 or rng.random() < merges_left / (merges_left + splits_left)))
        if merge:
            merges_left -= 1
            left = int(rng.integers(len(active) - 1))
            a, b = active[left], active[left + 1]
            new = _Segment(len(segments), segments[a].start, segments[b].end, (a, b), epoch)
            active[left:left + 2] = [new.id]
            op = _AdminOp("merge", f"{a},{b}", invoked, done, epoch,
                          _compact({"merged": new.id}))
            sealed.update({a: epoch, b: epoch})
            segments.append(new)
        else:
            splits_left -= 1
            wide = [i for i, s in enumerate(active) if segments[s].end > segments[s].start]
            at = wide[int(rng.integers(len(wide)))]
            parent = segments[active[at]]
            middle = (parent.start + parent.end) // 2
            low = _Segment(len(segments), parent.start, middle, (parent.id,), epoch)
            high = _Segment(len(segments) + 1, middle + 1, parent.end, (parent.id,), epoch)
            active[at:at + 1] = [low.id, high.id]
            op = _AdminOp("split", str(parent.id), invoked, done, epoch,
                          _compact({"children": [low.id, high.id]}))
            sealed[parent.id] = epoch
            segments += [low, high]
        since.append(done)
        actives.append(np.array(active))
        ops.append(op)
    documents = [_layout_document(segments, sealed, epoch) for epoch in range(changes + 1)]
    return _Layouts(segments, np.array(since, dtype=np.int64), actives, sealed, ops, documents)


def _layout_document(segments: list[_Segment], sealed: dict[int, int], epoch: int) -> str:
    """The layout of `epoch` as PIP-468's metadata store keeps it."""
    known = [s for s in segments if s.created <= epoch]
    children: dict[int, list[int]] = {}
    for segment in known:
        for parent in segment.parents:
            children.setdefault(parent, []).append(segment.id)
    return _compact({
        "epoch": epoch, "nextSegmentId": len(known), "properties": {},
        "segments": {str(s.id): {
            "segmentId": s.id, "hashRange": {"start": s.start, "end": s.end},
            "state": "SEALED" if sealed.get(s.id, epoch + 1) <= epoch else "ACTIVE",
            "parentIds": list(s.parents), "childIds": children.get(s.id, []),
            "createdAtEpoch": s.created,
            "sealedAtEpoch": sealed[s.id] if sealed.get(s.id, epoch + 1) <= epoch else 0}
            for s in known}})


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


@dataclass
class _Consumers:
    """Each connection of a `live` consumer ("incarnation"): which key slot it serves, in
    which cluster, from its subscribe's ok (`start`) to its crash or the failover that
    closed it (`end`). Sorted by slot, then time."""

    slot: np.ndarray
    cluster: np.ndarray
    invoked: np.ndarray
    start: np.ndarray
    end: np.ndarray
    names: list[str]
    replaces: list[str | None]

    def active(self, slot: np.ndarray, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The incarnation serving each slot at each time, and the time it can deliver
        (the time itself, or its start when the slot had no consumer then)."""
        which = np.searchsorted(self.slot * _SLOT_SPAN + self.end, slot * _SLOT_SPAN + times,
                                side="right")
        return which, np.maximum(times, self.start[which] + 1000)

    def connected(self, cluster: int, times: np.ndarray) -> np.ndarray:
        """How many consumers are connected in `cluster` at each time."""
        here = self.cluster == cluster
        return (np.searchsorted(np.sort(self.start[here]), times, side="right")
                - np.searchsorted(np.sort(self.end[here]), times, side="right"))

    def changes(self, slot: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """Whether the slot's consumer changes (one ends or subscribes) in [low, high]."""
        marks = np.sort(np.concatenate([self.slot * _SLOT_SPAN + self.invoked,
                                        self.slot * _SLOT_SPAN + self.end]))
        first = np.searchsorted(marks, slot * _SLOT_SPAN + low, side="left")
        following = marks[np.minimum(first, len(marks) - 1)]
        return np.asarray((first < len(marks)) & (following <= slot * _SLOT_SPAN + high))


@dataclass(frozen=True)
class _NemesisOp:
    f: str
    value: str
    invoked: int
    done: int
    detail: str
    done_detail: str


@dataclass
class _Faults:
    """The nemesis's operations, and the windows in which its faults hit clients: sends
    and acks of the fault's cluster (a WAN cut hits no client)."""

    ops: list[_NemesisOp]
    start: np.ndarray
    end: np.ndarray
    cluster: np.ndarray

    def hit(self, cluster: np.ndarray, times: np.ndarray) -> np.ndarray:
        """Whether a fault of that cluster is on at each time (windows never overlap)."""
        if not len(self.start):
            return np.zeros(len(times), dtype=bool)
        which = np.searchsorted(self.start, times, side="right") - 1
        at = np.maximum(which, 0)
        return np.asarray((which >= 0) & (times < self.end[at]) & (self.cluster[at] == cluster))


@dataclass
class _Run:
    """When everything but the messages happens."""

    messages: int
    duration: int
    """Sends are invoked in [_SENDS_START, _SENDS_START + duration)."""
    layouts: _Layouts
    failovers: np.ndarray
    """Invoke times; the first goes from a to b, the next back, ..."""
    failover_done: np.ndarray
    consumers: _Consumers
    faults: _Faults

    @property
    def sends_end(self) -> int:
        return _SENDS_START + self.duration

    def consuming(self, times: np.ndarray) -> np.ndarray:
        """The cluster `live` is read in at each time."""
        return np.asarray(np.searchsorted(self.failovers, times, side="right") % 2, np.int64)

    @property
    def final_cluster(self) -> int:
        return len(self.failovers) % 2

    def failover_near(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """Whether a failover is invoked in [low, high]."""
        return np.searchsorted(self.failovers, high, side="right") > np.searchsorted(
            self.failovers, low, side="left")


def _events_per_message(spec: MixSpec) -> float:
    """Events one message brings, on average: its send's two; its deliveries in `live`
    and an ack's two; a delivery and an ack's two in `audit`."""
    return 2 + 1 / (1 - spec.redelivery) + 2 + 3


def _plan_run(spec: MixSpec, rng: np.random.Generator) -> _Run:
    if not 0 <= spec.redelivery < 1:
        raise ValueError(f"redelivery must be in [0, 1), not {spec.redelivery}")
    if spec.producers < 1 or spec.consumers < 1 or spec.keys_per_producer < 1:
        raise ValueError("a mix needs at least one producer, one consumer and one key")
    messages = max(1, round(spec.events / _events_per_message(spec)))
    duration = max(MIN_DURATION_S * S, int(messages / spec.rate * S))
    spacing = duration / (spec.failovers + 1)
    if spacing < MIN_FAILOVER_SPACING_S * S:
        raise ValueError(f"{spec.failovers} failovers cannot be {MIN_FAILOVER_SPACING_S} s "
                         f"apart in a run of {duration / S:.0f} s")
    failovers = _ns(_SENDS_START + spacing * (np.arange(1, spec.failovers + 1)
                                              + rng.uniform(-0.2, 0.2, spec.failovers)))
    crashes = _plan_crashes(spec, rng, duration, failovers)
    consumers, failover_done = _plan_consumers(spec, rng, failovers, crashes)
    layouts = _plan_layouts(spec, rng, duration)
    faults = _plan_faults(spec, rng, duration)
    return _Run(messages, duration, layouts, failovers, failover_done, consumers, faults)


def _plan_crashes(spec: MixSpec, rng: np.random.Generator, duration: int,
                  failovers: np.ndarray) -> list[tuple[int, int]]:
    """(time, slot) of each crash, at least 5 s from any failover and from the slot's
    other crashes, so that no consumer is replaced twice at once."""
    gap = 5 * S
    chosen: list[tuple[int, int]] = []
    times = _ns(rng.uniform(_SENDS_START + gap, _SENDS_START + duration - 2 * gap,
                            4 * spec.crashes))
    slots = rng.integers(0, spec.consumers, 4 * spec.crashes)
    for time, slot in zip(times.tolist(), slots.tolist()):
        if len(chosen) == spec.crashes:
            break
        if (np.abs(failovers - time) >= gap).all() and all(
                abs(time - t) >= gap for t, s in chosen if s == slot):
            chosen.append((time, slot))
    return sorted(chosen)


def _plan_consumers(spec: MixSpec, rng: np.random.Generator, failovers: np.ndarray,
                    crashes: list[tuple[int, int]]) -> tuple[_Consumers, np.ndarray]:
    """Every slot subscribes at the start in cluster a; at a failover every slot
    subscribes anew in the other cluster, the failover completing once all have; after
    a crash a replacement subscribes 1 to 3 s later, naming the crashed consumer."""
    resubscribe = _between(rng, 50 * MS, 400 * MS, len(failovers) * spec.consumers).reshape(
        len(failovers), spec.consumers)
    failover_done = failovers + resubscribe.max(axis=1, initial=0) + 30 * MS
    columns: dict[str, list[Any]] = {k: [] for k in ("slot", "cluster", "invoked", "start",
                                                      "end", "names", "replaces")}
    for slot in range(spec.consumers):
        changes = sorted([(int(f), "failover", n) for n, f in enumerate(failovers)]
                         + [(t, "crash", 0) for t, s in crashes if s == slot])
        invoked, cluster, replaced = 100 * MS + slot * 3 * MS, 0, 0
        name, replaces = f"c{slot}-{CLUSTERS[0]}", None
        for time, kind, n in [*changes, (_FOREVER - 1, "end", 0)]:
            columns["slot"].append(slot)
            columns["cluster"].append(cluster)
            columns["invoked"].append(invoked)
            columns["start"].append(invoked + int(rng.integers(2 * MS, 20 * MS)))
            columns["end"].append(time)
            columns["names"].append(name)
            columns["replaces"].append(replaces)
            if kind == "failover":
                cluster = 1 - cluster
                invoked = time + int(resubscribe[n, slot])
                name, replaces = f"c{slot}-{CLUSTERS[cluster]}", None
            else:
                replaced += 1
                invoked = time + int(rng.integers(1 * S, 3 * S))
                name, replaces = f"c{slot}-{CLUSTERS[cluster]}-r{replaced}", name
    arrays = {k: np.array(v, dtype=np.int64) for k, v in columns.items()
              if k not in ("names", "replaces")}
    consumers = _Consumers(**arrays, names=columns["names"], replaces=columns["replaces"])
    return consumers, failover_done


def _plan_faults(spec: MixSpec, rng: np.random.Generator, duration: int) -> _Faults:
    """Faults in equal slices of the run (at least 5 s each), one each, of every kind the
    nemesis knows; an interval's heal, and the window in which it hits clients, end
    within its slice."""
    count = min(int(spec.faults_per_minute * duration / (60 * S)), duration // (5 * S))
    kinds = list(NEMESIS_OPS)
    ops: list[_NemesisOp] = []
    windows: list[tuple[int, int, int]] = []
    width = duration / max(count, 1)
    for n in range(count):
        kind = kinds[int(rng.integers(len(kinds)))]
        start = int(_SENDS_START + width * (n + rng.uniform(0.05, 0.3)))
        cluster = int(rng.integers(len(CLUSTERS)))
        target = f"{CLUSTERS[cluster]}-broker{int(rng.integers(1, BROKERS + 1))}"
        heal = heal_of(kind)
        last = int(start + min(width * rng.uniform(0.3, 0.6), 30 * S))
        opened = start + int(rng.integers(5 * MS, 120 * MS))
        if kind == "cut-wan":
            targets: list[str] = list(CLUSTERS)
            cluster = -1
        else:
            targets = [target]
        ops.append(_NemesisOp(kind, target if cluster >= 0 else "wan", start, opened,
                              _compact({"targets": targets}),
                              _fault_detail(kind, targets, cluster)))
        end = opened
        if heal is not None:
            end = last + int(rng.integers(5 * MS, 120 * MS))
            ops.append(_NemesisOp(heal, target if cluster >= 0 else "wan", last, end,
                                  _compact({"targets": targets}), _compact({"targets": targets})))
        windows.append((start, end + 500 * MS, cluster))
    starts, ends, clusters = (np.array([w[i] for w in windows], dtype=np.int64)
                              for i in range(3))
    return _Faults(ops, starts, ends, clusters)


def _fault_detail(kind: str, targets: list[str], cluster: int) -> str:
    """A fault's completion detail; a partition names the grudge, as the nemesis does."""
    if kind != "partition":
        return _compact({"targets": targets})
    nodes = [f"{CLUSTERS[cluster]}-{role}{n}" for role, count in
             (("broker", BROKERS), ("bookie", 3), ("zk", 1)) for n in range(1, count + 1)]
    others = [node for node in nodes if node not in targets]
    grudge = {**dict.fromkeys(others, targets), **dict.fromkeys(targets, others)}
    return _compact({"targets": targets, "grudge": grudge})


# --- sends ----------------------------------------------------------------------------------


@dataclass
class _Sends:
    """One row per message, in producer order then send order (so a key's messages, all
    of one producer, are in send order)."""

    producer: np.ndarray
    seq: np.ndarray
    key: np.ndarray
    invoked: np.ndarray
    done: np.ndarray
    outcome: np.ndarray
    """_OK, _FAIL or _INFO."""
    written: np.ndarray
    """Stored (every `ok`, some `info`)."""
    arrival: np.ndarray
    """When it was stored in its producer's cluster."""
    process: np.ndarray
    segment: np.ndarray
    hashes: np.ndarray
    """Per key id."""

    @property
    def home(self) -> np.ndarray:
        return self.producer % 2

    def arrival_in(self, cluster: int) -> np.ndarray:
        return np.where(self.home == cluster, self.arrival, self.arrival + _REPLICATION_LAG)

    def slot(self, consumers: int) -> np.ndarray:
        return self.key % consumers


def _invoke_times(duration: int, producer: np.ndarray, first: np.ndarray, gap: np.ndarray,
                  taken: np.ndarray) -> np.ndarray:
    """Each producer's invokes, one send at a time: its gaps between a completion and the
    next invoke (`gap`, relative) scaled so that its sends span `duration`."""
    idle = np.maximum(duration - np.bincount(producer, taken), duration // 10)
    scaled_gap = 1000 + _ns(gap * (idle / np.bincount(producer, gap))[producer])
    return np.asarray(_SENDS_START + _exclusive_cumsum(scaled_gap + taken, first) + scaled_gap)


def _plan_sends(spec: MixSpec, run: _Run, rng: np.random.Generator) -> _Sends:
    """Each producer sends one message at a time. Some sends in a fault's cluster during
    it fail at once; a producer's first such send ends `info` after a timeout instead (it
    then goes on under a new id)."""
    m, producers = run.messages, spec.producers
    counts = m // producers + (np.arange(producers) < m % producers)
    producer = np.repeat(np.arange(producers), counts)
    first = np.repeat(np.cumsum(counts) - counts, counts)
    seq = np.arange(m) - first
    latency = _exponential(rng, 300_000, 1500_000, 150 * MS, m)
    gap = rng.exponential(1.0, m)
    invoked = _invoke_times(run.duration, producer, first, gap, latency)
    hit = run.faults.hit(producer % 2, invoked) & (rng.random(m) < spec.fault_error_share)
    outcome = np.where(hit, _FAIL, _OK)
    fault = np.searchsorted(run.faults.start, invoked[hit], side="right")
    _, first_hit = np.unique(producer[hit] * (len(run.faults.start) + 1) + fault,
                             return_index=True)
    outcome[np.flatnonzero(hit)[first_hit]] = _INFO
    taken = np.select([outcome == _FAIL, outcome == _INFO],
                      [_between(rng, 1 * MS, 20 * MS, m), _between(rng, 1 * S, 3 * S, m)],
                      latency)
    invoked = _invoke_times(run.duration, producer, first, gap, taken)
    done = invoked + taken
    written = (outcome == _OK) | ((outcome == _INFO) & (rng.random(m) < 0.5))
    retired = _exclusive_cumsum((outcome == _INFO).astype(np.int64), first)
    keys = producers * spec.keys_per_producer
    key = producer * spec.keys_per_producer + rng.integers(0, spec.keys_per_producer, m)
    hashes = np.array([key_hash(f"k{k}") for k in range(keys)], dtype=np.int64)
    return _Sends(producer, seq, key, invoked, done, outcome, written,
                  np.where(outcome == _OK, done, invoked + latency),
                  _process_code(_PRODUCER, _retired_ids(producer, retired)),
                  run.layouts.route(hashes[key], invoked), hashes)


# --- injected messages ----------------------------------------------------------------------


@dataclass
class _Victims:
    """The messages each injection rewrites: disjoint, of distinct keys, and (but for the
    segment rewrites, which only move a send) quiet: sent ok, not the first write of its
    segment, with no failover or change of its consumer from _QUIET_BEFORE before to
    _QUIET_AFTER after, so that it is delivered once in `live` and the client acks it at
    once (its ack no fault touches)."""

    chosen: dict[str, np.ndarray] = field(default_factory=dict)
    order_later: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """The message sent just after each `order` victim, given the same fresh key."""
    fork_partner: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """For each `forked-position` victim, the message whose position it takes."""
    used: set[int] = field(default_factory=set)
    used_keys: set[int] = field(default_factory=set)

    def of(self, kind: str) -> np.ndarray:
        return self.chosen.get(kind, np.zeros(0, np.int64))

    def kept_simple(self) -> np.ndarray:
        """Every message whose `live` story must stay one delivery and a client ack."""
        return np.concatenate([*(self.of(k) for k in INJECTABLE
                                 if k not in ("dual-write", "misrouted")), self.order_later])

    @classmethod
    def choose(cls, spec: MixSpec, run: _Run, sends: _Sends, inject: dict[str, int],
               rng: np.random.Generator) -> _Victims:
        """Choose every injection's messages, and rewrite the sends of those that change
        a send: the segment (`dual-write`, `misrouted`), the key (`order`) or the outcome
        (`failed-delivered`)."""
        victims = cls()
        firsts = _first_writes(sends)
        quiet = _quiet(run, sends, sends.slot(spec.consumers), firsts)
        for kind in INJECTABLE:
            count = inject.get(kind, 0)
            if kind == "stalled-subscription" or not count:
                continue  # cursor readings only
            if kind == "order":
                victims._choose_order(spec, run, sends, quiet, firsts, count, rng)
            elif kind in ("dual-write", "misrouted"):
                targets = (_dual_write_targets(run, sends, firsts) if kind == "dual-write"
                           else _misrouted_targets(run, sends, rng))
                taken = victims._take(kind, targets >= 0, sends, count, rng)
                sends.segment[taken] = targets[taken]
            else:
                victims._take(kind, quiet & _extra_condition(kind, run, sends), sends, count,
                              rng)
        sends.outcome[victims.of("failed-delivered")] = _FAIL
        return victims

    def _take(self, kind: str, wanted: np.ndarray, sends: _Sends, count: int,
              rng: np.random.Generator) -> np.ndarray:
        taken: list[int] = []
        for m in rng.permutation(np.flatnonzero(wanted)).tolist():
            if len(taken) == count:
                break
            if self._free(m, sends):
                taken.append(m)
                self._use(m, sends)
        if len(taken) < count:
            raise _too_few(kind, count, len(taken))
        self.chosen[kind] = np.sort(np.array(taken, dtype=np.int64))
        return self.chosen[kind]

    def _free(self, m: int, sends: _Sends) -> bool:
        return m not in self.used and int(sends.key[m]) not in self.used_keys

    def _use(self, m: int, sends: _Sends) -> None:
        self.used.add(m)
        self.used_keys.add(int(sends.key[m]))

    def _choose_order(self, spec: MixSpec, run: _Run, sends: _Sends, quiet: np.ndarray,
                      firsts: np.ndarray, count: int, rng: np.random.Generator) -> None:
        """Pairs of one producer's consecutive sends, given a fresh key of their own (so
        they are that key's only pair) that keeps the first one's consumer; the first is
        later delivered after the second (`_inject_deliveries`)."""
        pairs = np.flatnonzero(quiet[:-1] & quiet[1:]
                               & (sends.producer[:-1] == sends.producer[1:])
                               & (sends.invoked[1:] - sends.invoked[:-1] < 2 * S))
        slot = sends.slot(spec.consumers)[pairs]
        pairs = pairs[~_changes_near(run, sends.invoked[pairs + 1], slot)]
        fresh_from = -(-len(sends.hashes) // spec.consumers) * spec.consumers
        earlier: list[int] = []
        for a in rng.permutation(pairs).tolist():
            if len(earlier) == count:
                break
            pair = [a, a + 1]
            if not (self._free(a, sends) and self._free(a + 1, sends)):
                continue
            fresh = fresh_from + len(earlier) * spec.consumers + int(sends.key[a]) % spec.consumers
            segments = run.layouts.route(np.full(2, key_hash(f"k{fresh}")), sends.invoked[pair])
            if (firsts[segments] >= sends.invoked[pair] - 100 * MS).any():
                continue  # it would be its new segment's first write
            for m in pair:
                self._use(m, sends)
            sends.segment[pair] = segments
            sends.key[pair] = fresh
            earlier.append(a)
        if len(earlier) < count:
            raise _too_few("order", count, len(earlier))
        sends.hashes = np.concatenate([sends.hashes, np.array(
            [key_hash(f"k{k}") for k in range(len(sends.hashes), fresh_from + count
                                              * spec.consumers)], dtype=np.int64)])
        self.chosen["order"] = np.array(earlier, dtype=np.int64)
        self.order_later = self.chosen["order"] + 1

    def pick_fork_partners(self, sends: _Sends, positions: _Positions) -> None:
        """For each `forked-position` victim, the nearest earlier message of its ledger
        sent ok from the same cluster and touched by no injection: its position is taken."""
        partners: list[int] = []
        for v in self.of("forked-position").tolist():
            cluster = int(sends.home[v])
            ledger = int(_Positions.ledger(sends.segment[v], cluster))
            earlier = positions.holders(ledger, cluster)[:positions.entry[cluster][v]][::-1]
            partner = next((int(w) for w in earlier if sends.outcome[w] == _OK
                            and sends.home[w] == cluster and int(w) not in self.used), None)
            if partner is None:
                raise _too_few("forked-position", len(self.of("forked-position")), len(partners))
            self.used.add(partner)
            partners.append(partner)
        self.fork_partner = np.array(partners, dtype=np.int64)


def _too_few(kind: str, wanted: int, found: int) -> ValueError:
    return ValueError(f"too few events to inject {wanted} {kind}: only {found} suitable "
                      f"messages; generate a larger history")


def _first_writes(sends: _Sends) -> np.ndarray:
    """Per segment, the completion time of its first acknowledged write (_NEVER: none)."""
    firsts = np.full(int(sends.segment.max()) + 1, _NEVER, dtype=np.int64)
    ok = sends.outcome == _OK
    np.minimum.at(firsts, sends.segment[ok], sends.done[ok])
    return firsts


def _changes_near(run: _Run, times: np.ndarray, slot: np.ndarray) -> np.ndarray:
    """Whether a failover or a change of the slot's consumer comes near a send invoked at
    these times (see `_Victims`), or the run begins or ends. Faults may: they touch no
    victim's ack."""
    low, high = times - _QUIET_BEFORE, times + _QUIET_AFTER
    return np.asarray(run.failover_near(low, high) | run.consumers.changes(slot, low, high)
                      | (low < _SENDS_START) | (high > run.sends_end))


def _quiet(run: _Run, sends: _Sends, slot: np.ndarray, firsts: np.ndarray) -> np.ndarray:
    """Messages an injection may rewrite without touching anything else (`_Victims`)."""
    return np.asarray((sends.outcome == _OK) & ~_changes_near(run, sends.invoked, slot)
                      & (firsts[sends.segment] < sends.invoked - 100 * MS))


def _extra_condition(kind: str, run: _Run, sends: _Sends) -> np.ndarray:
    """What an injection needs beyond quiet: `multi-position`, a delivery in the cluster
    the message was written in; `forked-position`, to be written where `audit` does not
    read (there a cumulative ack may already hold the earlier position it takes, making
    its delivery a duplicate); `ack-unapplied`, a delivery in the cluster `live` ends
    in, whose last reading alone shows consumers connected."""
    consuming = run.consuming(sends.invoked)
    if kind == "multi-position":
        return np.asarray(consuming == sends.home)
    if kind == "forked-position":
        return np.asarray(sends.home != _AUDIT_CLUSTER)
    if kind == "ack-unapplied":
        return np.asarray(consuming == run.final_cluster)
    return np.ones(len(sends.key), dtype=bool)


def _dual_write_targets(run: _Run, sends: _Sends, firsts: np.ndarray) -> np.ndarray:
    """Per message, the parent of its segment whose range holds its key (sealed by
    then), when it has one and the message is not the segment's first write (-1: none).
    A child's first write precedes it, so writing it to the parent is a dual write."""
    starts, ends = run.layouts.ranges()
    targets = np.full(len(sends.key), -1, dtype=np.int64)
    late = (sends.outcome == _OK) & (firsts[sends.segment] < sends.invoked - 100 * MS)
    hashes = sends.hashes[sends.key]
    for segment in run.layouts.segments:
        for parent in segment.parents:
            fits = (late & (sends.segment == segment.id) & (starts[parent] <= hashes)
                    & (hashes <= ends[parent]))
            targets[fits] = parent
    return targets


def _misrouted_targets(run: _Run, sends: _Sends, rng: np.random.Generator) -> np.ndarray:
    """Per message sent ok, another segment active when it was sent, whose range does not
    hold its key (-1 while only one was active)."""
    epochs = run.layouts.epoch_at(sends.invoked)
    starts, _ = run.layouts.ranges()
    targets = np.full(len(sends.key), -1, dtype=np.int64)
    for epoch, active in enumerate(run.layouts.active):
        if len(active) < 2:
            continue
        here = np.flatnonzero((epochs == epoch) & (sends.outcome == _OK))
        own = np.searchsorted(starts[active], sends.hashes[sends.key[here]], side="right") - 1
        targets[here] = active[(own + rng.integers(1, len(active), len(here))) % len(active)]
    return targets


# --- where messages are stored ----------------------------------------------------------------


@dataclass
class _Positions:
    """Each stored message's entry in its segment's ledger in each cluster, in the order
    it arrived there (-1: not stored)."""

    entry: list[np.ndarray]
    ledger_sizes: list[dict[int, int]]
    by_entry: list[np.ndarray]
    """Per cluster, the stored messages by ledger, then entry."""
    ledger_by_entry: list[np.ndarray]

    @staticmethod
    def ledger(segment: np.ndarray | int, cluster: np.ndarray | int) -> np.ndarray:
        """Every segment has a ledger of its own in each cluster."""
        return np.asarray(_LEDGER_BASE + 2 * np.asarray(segment) + cluster, dtype=np.int64)

    @classmethod
    def of(cls, sends: _Sends) -> _Positions:
        entries, sizes, orders, ledgers = [], [], [], []
        stored = np.flatnonzero(sends.written)
        for cluster in range(len(CLUSTERS)):
            ledger = cls.ledger(sends.segment[stored], cluster)
            order = stored[np.lexsort((stored, sends.arrival_in(cluster)[stored], ledger))]
            ledger_sorted = cls.ledger(sends.segment[order], cluster)
            starts = np.r_[0, np.flatnonzero(np.diff(ledger_sorted)) + 1]
            lengths = np.diff(np.r_[starts, len(order)])
            entry = np.full(len(sends.key), -1, dtype=np.int64)
            entry[order] = _ragged_arange(lengths)
            entries.append(entry)
            sizes.append(dict(zip(ledger_sorted[starts].tolist(), lengths.tolist())))
            orders.append(order)
            ledgers.append(ledger_sorted)
        return cls(entries, sizes, orders, ledgers)

    def holders(self, ledger: int, cluster: int) -> np.ndarray:
        """The messages of a ledger, by entry."""
        low, high = np.searchsorted(self.ledger_by_entry[cluster], [ledger, ledger + 1])
        return self.by_entry[cluster][low:high]

    def beyond(self, sends: _Sends, msg: np.ndarray, offset: int) -> np.ndarray:
        """Entries past the end of each message's ledger in the cluster it was written in,
        two per message (`offset` 0 and 1): positions no other message ever takes."""
        home = sends.home[msg]
        ledgers = self.ledger(sends.segment[msg], home)
        return np.array([self.ledger_sizes[c][int(led)] + 2 * n + offset for n, (c, led)
                         in enumerate(zip(home.tolist(), ledgers.tolist()))], dtype=np.int64)


# --- deliveries and acks --------------------------------------------------------------------

_DELIVERY_FIELDS = ("msg", "time", "sub", "cluster", "consumer", "entry")


@dataclass
class _Deliveries:
    """`recv` events: the message (-1: a value nobody sent), when, in which subscription
    and cluster, by which `live` consumer incarnation (-1: `audit`'s reader); `entry`
    replaces the stored position (-1: the message's own; -2: no position)."""

    msg: np.ndarray
    time: np.ndarray
    sub: np.ndarray
    cluster: np.ndarray
    consumer: np.ndarray
    entry: np.ndarray

    @classmethod
    def of(cls, msg: np.ndarray, time: np.ndarray, sub: int, cluster: np.ndarray | int,
           consumer: np.ndarray | int) -> _Deliveries:
        n = len(msg)
        return cls(msg, time, np.full(n, sub), np.broadcast_to(cluster, n).astype(np.int64),
                   np.broadcast_to(consumer, n).astype(np.int64), np.full(n, -1, np.int64))

    def join(self, *others: _Deliveries) -> _Deliveries:
        return _Deliveries(*(np.concatenate([getattr(d, f) for d in (self, *others)])
                             for f in _DELIVERY_FIELDS))

    def take(self, rows: np.ndarray) -> _Deliveries:
        return _Deliveries(*(getattr(self, f)[rows] for f in _DELIVERY_FIELDS))


_ACK_FIELDS = ("msg", "invoked", "done", "sub", "cluster", "consumer", "outcome", "kind")


@dataclass
class _Acks:
    """`ack` operations; `done` is -1 for those a cursor reading will confirm (set once
    the readings are known, `_confirm_acks`)."""

    msg: np.ndarray
    invoked: np.ndarray
    done: np.ndarray
    sub: np.ndarray
    cluster: np.ndarray
    consumer: np.ndarray
    outcome: np.ndarray
    kind: np.ndarray

    def join(self, *others: _Acks) -> _Acks:
        return _Acks(*(np.concatenate([getattr(a, f) for a in (self, *others)])
                       for f in _ACK_FIELDS))

    def take(self, rows: np.ndarray) -> _Acks:
        return _Acks(*(getattr(self, f)[rows] for f in _ACK_FIELDS))

    @property
    def applied(self) -> np.ndarray:
        """The broker took it: every ack but a refused one and the injected unapplied."""
        return np.asarray((self.outcome == _ACKED) | (self.outcome == _TIMED_OUT))


def _plan_acks(spec: MixSpec, rng: np.random.Generator, msg: np.ndarray, invoked: np.ndarray,
               sub: int, cluster: np.ndarray | int, consumer: np.ndarray | int,
               outcome: np.ndarray, client_only: np.ndarray) -> _Acks:
    """Acks invoked at these times: a refused one is answered at once, a timed out one
    after 1 to 3 s, the others by the client or (most) by a later cursor reading."""
    n = len(msg)
    kind = np.where((rng.random(n) < spec.cursor_ack_share) & ~client_only, _CURSOR, _CLIENT)
    answered = np.select(
        [outcome == _REFUSED, outcome == _TIMED_OUT],
        [_between(rng, 1 * MS, 20 * MS, n), _between(rng, 1 * S, 3 * S, n)],
        _exponential(rng, 200_000, 1 * MS, 50 * MS, n))
    done = np.where((kind == _CURSOR) & (outcome == _ACKED), -1, invoked + answered)
    return _Acks(msg, invoked, done, np.full(n, sub), np.broadcast_to(cluster, n).astype(np.int64),
                 np.broadcast_to(consumer, n).astype(np.int64), outcome, kind)


def _no_acks(spec: MixSpec, rng: np.random.Generator) -> _Acks:
    nothing = np.zeros(0, np.int64)
    return _plan_acks(spec, rng, nothing, nothing, _LIVE, 0, 0, nothing, nothing.astype(bool))


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
    away before acking it (a crash, a failover), or after a refused ack. Then what the
    failovers' snapshot lag delivers again (`_snapshot_redeliveries`)."""
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
        time = np.select([again, gone], [time + delay, consumers.end[which]], answered + delay)
        more = again | gone | (acking & (outcome == _REFUSED))
        msg, time = msg[more], time[more]
        if not len(msg):
            break
    else:
        raise RuntimeError("live deliveries did not settle")
    delivered, acked = deliveries[0].join(*deliveries[1:]), acks[0].join(*acks[1:])
    lagged, lag_acks = _snapshot_redeliveries(spec, run, sends, acked, rng)
    return delivered.join(lagged), acked.join(lag_acks)


def _snapshot_redeliveries(spec: MixSpec, run: _Run, sends: _Sends, acks: _Acks,
                           rng: np.random.Generator) -> tuple[_Deliveries, _Acks]:
    """At a failover from A to B, B's copy of the subscription holds what A had
    acknowledged a snapshot earlier, so B delivers again, and acks, what A acknowledged
    in the SNAPSHOT_LAG before (well within `duplicate-window`'s bound)."""
    deliveries = [_Deliveries.of(np.zeros(0, np.int64), np.zeros(0, np.int64), _LIVE, 0, 0)]
    planned = [_no_acks(spec, rng)]
    for n, failover in enumerate(run.failovers.tolist()):
        source, target = n % 2, 1 - n % 2
        recent = ((acks.cluster == source) & (acks.outcome != _REFUSED)
                  & (acks.invoked > failover - SNAPSHOT_LAG) & (acks.invoked < failover))
        msg = np.unique(acks.msg[recent])
        which, time = run.consumers.active(
            sends.slot(spec.consumers)[msg],
            failover + _exponential(rng, 1 * MS, 25 * MS, 400 * MS, len(msg)))
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


def _inject_deliveries(sends: _Sends, positions: _Positions, victims: _Victims,
                       deliveries: _Deliveries, acks: _Acks,
                       rng: np.random.Generator) -> tuple[_Deliveries, _Acks]:
    """The injections that change deliveries and acks. Each victim has one `live`
    delivery and one client ack, answered at once, so an extra delivery just after it
    comes from the same consumer."""
    live, live_acks = deliveries.sub == _LIVE, acks.sub == _LIVE
    row_of = np.full(len(sends.key), -1, dtype=np.int64)
    row_of[deliveries.msg[live]] = np.flatnonzero(live)
    ack_of = np.full(len(sends.key), -1, dtype=np.int64)
    ack_of[acks.msg[live_acks]] = np.flatnonzero(live_acks)

    def after_ack(msg: np.ndarray) -> _Deliveries:
        again = deliveries.take(row_of[msg])
        again.time = acks.done[ack_of[msg]] + _between(rng, 5 * MS, 50 * MS, len(msg))
        return again

    duplicates = after_ack(victims.of("duplicate"))
    stray = after_ack(victims.of("unexpected"))
    stray.msg[:] = -1
    stray.entry[:] = -2
    third_copy = after_ack(victims.of("multi-position"))
    third_copy.entry = positions.beyond(sends, victims.of("multi-position"), 1)
    earlier, later = victims.of("order"), victims.order_later
    shift = (deliveries.time[row_of[later]] + _between(rng, 1 * MS, 20 * MS, len(earlier))
             - deliveries.time[row_of[earlier]])
    deliveries.time[row_of[earlier]] += shift
    acks.invoked[ack_of[earlier]] += shift
    acks.done[ack_of[earlier]] += shift
    unapplied = ack_of[victims.of("ack-unapplied")]
    acks.outcome[unapplied] = _UNAPPLIED
    acks.kind[unapplied] = _CURSOR
    acks.done[unapplied] = -1
    lost = np.zeros(len(sends.key), dtype=bool)
    lost[victims.of("lost")] = True
    kept = deliveries.take(np.flatnonzero(~(live & lost[deliveries.msg])))
    return (kept.join(duplicates, stray, third_copy),
            acks.take(np.flatnonzero(~(live_acks & lost[acks.msg]))))


# --- cursor readings ------------------------------------------------------------------------


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


def _text(values: np.ndarray) -> pa.Array:
    return pa.array(np.asarray(values, dtype=np.int64)).cast(pa.string())


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


# --- the events -----------------------------------------------------------------------------


class _Texts:
    """A text column's distinct values, as codes into one dictionary built at the end."""

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}
        self._chunks: list[pa.Array] = []
        self._pending: list[str] = []
        self.size = 0

    def code(self, text: str) -> int:
        found = self._codes.get(text)
        if found is None:
            found = self._codes[text] = self.size
            self._pending.append(text)
            self.size += 1
        return found

    def codes(self, texts: pa.Array) -> np.ndarray:
        """Codes for many texts, each taken as new (cursor details)."""
        self._flush()
        self._chunks.append(texts)
        self.size += len(texts)
        return np.arange(self.size - len(texts), self.size)

    def dictionary(self) -> pa.Array:
        self._flush()
        return pa.concat_arrays([pa.array([], pa.string()), *self._chunks])

    def _flush(self) -> None:
        if self._pending:
            self._chunks.append(pa.array(self._pending, pa.string()))
            self._pending = []


_COLUMNS: dict[str, type[np.integer[Any]]] = {
    "time": np.int64, "prio": np.int8, "process": np.int64, "type": np.int8, "f": np.int8,
    "cluster": np.int8, "node": np.int8, "topic": np.int8, "subscription": np.int8,
    "consumer": np.int32, "key": np.int32, "value": np.int64, "segment": np.int32,
    "ledger": np.int32, "entry": np.int64, "epoch": np.int32, "redelivery": np.int32,
    "error": np.int8, "detail": np.int32}
"""Event columns as codes, -1 when absent: `value` >= 0 is a message, <= -2 a text;
`ledger` and `entry` make the position. `prio` orders the events of one instant: a
reading before the acks it confirms."""
_CHUNK = 1 << 21
"""Rows converted to Arrow at a time: bounds what the conversion holds besides the table."""


class _Events:
    """Events gathered group by group (as codes of each column's width), laid out in time
    order at the end."""

    def __init__(self) -> None:
        self._parts: list[dict[str, Any]] = []
        self.texts = _Texts()
        self.details = _Texts()

    def add(self, time: np.ndarray, **columns: Any) -> None:
        if len(time):
            self._parts.append({"n": len(time), "time": time.astype(np.int64), **{
                name: np.asarray(value).astype(_COLUMNS[name]) for name, value in
                columns.items()}})

    def value(self, text: str) -> int:
        return -2 - self.texts.code(text)

    def detail(self, text: str) -> int:
        return self.details.code(text)

    def column(self, name: str, keep: bool = False) -> np.ndarray:
        """One column over every event, in the order added; taken out of the events unless
        kept, so that each column's codes are freed once converted."""
        default = np.asarray(0 if name == "prio" else -1, _COLUMNS[name])
        found = np.concatenate([np.broadcast_to(p.get(name, default), p["n"])
                                for p in self._parts])
        if not keep:
            for part in self._parts:
                part.pop(name, None)
        return found

    def order(self) -> np.ndarray:
        """Time order; within an instant, by `prio`, then as added."""
        stamp = self.column("time", keep=True) * 8 + self.column("prio")
        return np.argsort(stamp, kind="stable")


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
                   "duplicate_window_bound_ms": DEFAULT_DUPLICATE_WINDOW_BOUND_MS})))
    _add_subscribes(events, run)
    entries = [_event_entries(sends, positions, victims, c) for c in range(len(CLUSTERS))]
    _add_sends(events, sends, positions, victims, entries)
    _add_deliveries(events, run, sends, deliveries, entries)
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


def _add_deliveries(events: _Events, run: _Run, sends: _Sends, deliveries: _Deliveries,
                    entries: list[np.ndarray]) -> None:
    """`recv` observations, with the key, the position in the delivering cluster and how
    often the message came there before; an `unexpected` one names a value nobody sent."""
    msg = np.maximum(deliveries.msg, 0)
    stray = np.flatnonzero(deliveries.msg < 0)
    value = deliveries.msg.copy()
    value[stray] = [events.value(f"u{n}") for n in range(len(stray))]
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


def _dictionary_column(codes: np.ndarray, dictionary: pa.Array) -> pa.Array:
    """Texts by code into `dictionary`; a negative code is absent."""
    indices = pa.array(codes, type=pa.int64(), mask=codes < 0)
    return pa.DictionaryArray.from_arrays(indices, dictionary).dictionary_decode()


def _process_names(codes: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, pa.Array]:
    """Codes into a dictionary of the reserved names, then `p0`, `p1`, ... for client
    processes in the order they first appear (events in `order`)."""
    client = codes >= 0
    kind, ids = codes >> _KIND_SHIFT, codes & ((1 << _KIND_SHIFT) - 1)
    per_kind = np.zeros(int(kind.max(initial=0)) + 1, dtype=np.int64)
    np.maximum.at(per_kind, kind[client], ids[client] + 1)
    dense = np.where(client, (np.cumsum(per_kind) - per_kind)[np.maximum(kind, 0)] + ids, -1)
    first_seen = np.full(int(per_kind.sum()), len(codes), dtype=np.int64)
    in_order = dense[order]
    seen = in_order >= 0
    np.minimum.at(first_seen, in_order[seen], np.flatnonzero(seen))
    rank = np.empty(len(first_seen), dtype=np.int64)
    rank[np.argsort(first_seen, kind="stable")] = np.arange(len(first_seen))
    named = np.where(client, len(_RESERVED) + rank[np.maximum(dense, 0)], -1 - codes)
    return named, pa.array([*_RESERVED, *(f"p{n}" for n in range(len(first_seen)))])


def _position_texts(ledger: np.ndarray, entry: np.ndarray) -> pa.Array:
    joined = pc.binary_join_element_wise(_text(ledger), ":", _text(entry), "")
    return pc.if_else(pa.array(ledger >= 0), joined, pa.scalar(None, pa.string()))


def _table(events: _Events, run: _Run, sends: _Sends) -> pa.Table:
    """The events in time order as Arrow columns, each converted a chunk of rows at a
    time so that little besides the table itself is held at once."""
    order = events.order()
    chunks = [order[start:start + _CHUNK] for start in range(0, len(order), _CHUNK)]
    messages = len(sends.key)
    dictionaries: dict[str, pa.Array] = {
        "type": pa.array(_TYPE_NAMES), "f": pa.array(_F_NAMES), "cluster": pa.array(CLUSTERS),
        "node": pa.array([f"{c}-broker{n}" for c in CLUSTERS for n in range(1, BROKERS + 1)]),
        "topic": pa.array([TOPIC]), "subscription": pa.array(SUBSCRIPTIONS),
        "consumer": pa.array([*run.consumers.names, f"audit-{CLUSTERS[_AUDIT_CLUSTER]}"]),
        "key": pc.binary_join_element_wise("k", _text(np.arange(len(sends.hashes))), ""),
        "error": pa.array(_ERRORS), "detail": events.details.dictionary(),
        "value": pa.concat_arrays([
            pc.binary_join_element_wise("w", _text(sends.producer), "-", _text(sends.seq), ""),
            events.texts.dictionary()])}
    columns: dict[str, pa.ChunkedArray] = {
        "index": pa.chunked_array([pa.array(np.arange(len(order), dtype=np.int64))])}
    for name in ARROW_SCHEMA.names[1:]:
        if name == "position":
            ledger, entry = events.column("ledger"), events.column("entry")
            columns[name] = pa.chunked_array(
                [_position_texts(ledger[rows], entry[rows]) for rows in chunks], pa.string())
            continue
        codes = events.column(name)
        if name == "process":
            codes, dictionaries[name] = _process_names(codes, order)
        elif name == "value":
            codes = np.where(codes <= -2, messages - 2 - codes, codes)
        if name in dictionaries:
            columns[name] = pa.chunked_array(
                [_dictionary_column(codes[rows], dictionaries[name]) for rows in chunks],
                pa.string())
        else:
            columns[name] = pa.chunked_array(
                [pa.array(codes[rows].astype(np.int64),
                          mask=None if name == "time" else codes[rows] < 0) for rows in chunks],
                pa.int64())
    return pa.table(columns, schema=ARROW_SCHEMA)
