"""Keys that hash onto the edges of segments, for the `scalable` workload.

A key's hash picks the segment that stores it, and a random key lands on one given hash
with a chance of 1 in 65,536. An off-by-one at a segment's first or last hash (an
inclusive end read as exclusive, a split point one off between the controller and the
client) therefore never shows under a handful of random keys. So a share of the
workload's sends (`edge_key_share`) carry keys found to hash exactly onto the first or
the last hash of an active segment, taking every such edge in turn, so that each
boundary the layout reaches is hit. The edges are those of the layout the client routes
by (the DAG the brokers push), the one whose boundaries decide where a key goes.
"""

from __future__ import annotations

import functools
import itertools
import random
import threading
from collections.abc import Iterable

from history.schema import HASH_SPACE, key_hash

SEARCH_LIMIT = 200 * HASH_SPACE
"""Candidates tried per hash before giving up: a miss after this many has a chance of
about e^-200."""


@functools.cache
def key_hashing_to(hash_value: int) -> str:
    """A key whose hash is `hash_value`: the first of `e<hash>-0`, `e<hash>-1`, ... that
    hashes there, so every run finds the same key (about 65,536 candidates on average,
    a few hundredths of a second)."""
    for n in range(SEARCH_LIMIT):
        key = f"e{hash_value:04x}-{n}"
        if key_hash(key) == hash_value:
            return key
    raise LookupError(f"no key among {SEARCH_LIMIT} candidates hashes to {hash_value}")


def edge_hashes(ranges: Iterable[tuple[int, int]]) -> tuple[int, ...]:
    """The first and the last hash of every `(start, end)` range, in order, each once."""
    return tuple(sorted({h for hash_range in ranges for h in hash_range}))


class EdgeKeys:
    """The edge keys of the newest layout learnt, handed out in turn."""

    def __init__(self, share: float) -> None:
        self.share = share
        self._epoch = -1
        self._keys: tuple[str, ...] = ()
        self._turn = itertools.count()
        self._lock = threading.Lock()

    def learn(self, epoch: int, ranges: Iterable[tuple[int, int]]) -> None:
        """Take the edges of the active segments' `(start, end)` ranges of layout `epoch`,
        unless a newer one was learnt (the keys are found before they replace the old)."""
        if not self.share or epoch <= self._epoch:
            return
        keys = tuple(key_hashing_to(h) for h in edge_hashes(ranges))
        with self._lock:
            if epoch > self._epoch:
                self._epoch, self._keys = epoch, keys

    def key_for(self, planned: str, rng: random.Random) -> str:
        """`planned`, or, for a share `share` of the calls as `rng` draws them, the next
        edge key in turn (`planned` until a layout was learnt)."""
        if not self.share or rng.random() >= self.share:
            return planned
        with self._lock:
            keys = self._keys
            return keys[next(self._turn) % len(keys)] if keys else planned
