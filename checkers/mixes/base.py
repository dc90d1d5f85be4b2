"""What every module of the mixes shares: units, the names of the topic, clusters and
subscriptions, the run's fixed times, the codes events are planned in (types, `f`s, errors,
processes, ack outcomes and kinds), and small array helpers. It imports nothing of the
package, so that each module can take from it."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa

from history.faults import NEMESIS_OPS, heal_of
from history.schema import DEFAULT_DUPLICATE_WINDOW_BOUND_MS, DEFAULT_STALLED_SUBSCRIPTION_BOUND_MS

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
SNAPSHOT_TIMEOUT = 3 * S
"""The snapshot timeout a mix's `meta` names. The lag above holds at every failover, a WAN
cut's aftermath included, as with brokers that abandon a lost snapshot this soon (the
scenarios' `snapshot_timeout_s = 3`), so `duplicate-window` judges failovers from 10 s
after a heal, as it would on such a cluster."""
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


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"))


def _text(values: np.ndarray) -> pa.Array:
    return pa.array(np.asarray(values, dtype=np.int64)).cast(pa.string())
