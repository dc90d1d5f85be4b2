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
  interval (well within `duplicate-window`'s bound). In each cluster a key's first
  deliveries come in send order, as a broker dispatches from the cursor, also where a
  consumer's start brings what waited, what its predecessor left and those redeliveries;
- the `failover` subscription `audit` reads everything in cluster b, in order, and
  acknowledges some messages cumulatively (`live`'s acks never are: Pulsar refuses
  cumulative acknowledgements on Shared and Key_Shared subscriptions);
- keys and values are short names (`k{n}`, `w{producer}-{seq}`), or as long as a spec asks,
  each its name followed by random letters and digits, which Parquet's encodings cannot
  fold away as they would a constant padding;
- acks run on a pool of client processes, as the harness's cursor observer runs them:
  most complete `ok` when a periodic `cursor` reading covers their position, the others
  with the client's answer;
- the nemesis partitions, kills, pauses and cuts the WAN; in a fault's cluster some sends
  complete `fail` (never written) or `info` (written or not; the producer goes on under a
  new process id), and some acks `fail` (and are redelivered) or `info`;
- a drain after the last heal, then a last `cursor` reading of every subscription.

Every process's operations interleave with everyone else's in time. Each message's story
is planned as arrays of times (numpy), and the events are laid out and sorted once at the
end, so twenty million events (of short keys and values) take well under a minute.

`inject` adds anomalies of `checkers.synthetic.INJECTABLE`, each unit on messages no other
injection touches, chosen where nothing else happens to them (no failover or change of
consumer near, delivered once), so that it adds exactly one counted unit to its checker
and nothing to any other.

The modules, from the bottom up: `base.py` (units, names, codes and the run's times, and
small array helpers), `spec.py` (`MixSpec`, `MIXES`), `padding.py` (the texts of keys and
values), the run's story (`layouts.py`, `consumers.py`, `faults.py`, and `run.py`, which
plans it), `sends.py`, `positions.py` (where each message is stored), `deliveries.py` (the
`recv` and `ack` records), `injections.py` (the messages each anomaly rewrites, and how),
`subscriptions.py` (what `live` and `audit` deliver and ack), `readings.py` (the `cursor`
readings), `events.py` (events as codes), `recording.py` (every planned operation as
events) and `table.py` (the Arrow table). This module generates a history from them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from checkers.mixes.base import (
    BROKERS,
    CLUSTERS,
    CURSOR_POLL,
    DRAIN_QUIET,
    MIN_DURATION_S,
    MIN_FAILOVER_SPACING_S,
    MS,
    SNAPSHOT_LAG,
    SUBSCRIPTIONS,
    TOPIC,
    S,
)
from checkers.mixes.events import _Events
from checkers.mixes.injections import _inject_deliveries, _Victims
from checkers.mixes.positions import _Positions
from checkers.mixes.recording import _events
from checkers.mixes.run import _plan_run, _Run
from checkers.mixes.sends import _plan_sends, _Sends
from checkers.mixes.spec import MIXES, MixSpec, scaled
from checkers.mixes.subscriptions import _audit_deliveries, _live_deliveries
from checkers.mixes.table import _table
from checkers.synthetic import INJECTABLE

__all__ = [
    "BROKERS",
    "CLUSTERS",
    "CURSOR_POLL",
    "DRAIN_QUIET",
    "MIN_DURATION_S",
    "MIN_FAILOVER_SPACING_S",
    "MIXES",
    "MS",
    "SNAPSHOT_LAG",
    "SUBSCRIPTIONS",
    "TOPIC",
    "MixSpec",
    "S",
    "generate",
    "scaled",
    "write_parquet",
]


def generate(spec: MixSpec, inject: dict[str, int]) -> pa.Table:
    """The history as an Arrow table (`history.schema.ARROW_SCHEMA`), index and time in
    order; `inject` maps anomalies of INJECTABLE to how many counted units to add."""
    _check_injections(inject)
    events, run, sends = _planned_events(spec, inject)
    return _table(spec, events, run, sends)


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
