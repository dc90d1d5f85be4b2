"""The sends: each producer's messages, one at a time, with their keys, times, outcomes
(faults make some `fail` or `info`), processes and segments."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from checkers.mixes.base import (
    _FAIL,
    _INFO,
    _OK,
    _PRODUCER,
    _REPLICATION_LAG,
    _SENDS_START,
    MS,
    S,
    _between,
    _exclusive_cumsum,
    _exponential,
    _ns,
    _process_code,
    _retired_ids,
)
from checkers.mixes.padding import _key_hashes
from checkers.mixes.run import _Run
from checkers.mixes.spec import MixSpec


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
    hashes = _key_hashes(spec, np.arange(keys))
    return _Sends(producer, seq, key, invoked, done, outcome, written,
                  np.where(outcome == _OK, done, invoked + latency),
                  _process_code(_PRODUCER, _retired_ids(producer, retired)),
                  run.layouts.route(hashes[key], invoked), hashes)
