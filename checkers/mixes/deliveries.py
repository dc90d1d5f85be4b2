"""The records of deliveries (`recv`) and acks as arrays, and how an ack is answered: at
once by the client, after a timeout, or later by a cursor reading."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from checkers.mixes.base import (
    _ACKED,
    _CLIENT,
    _CURSOR,
    _LIVE,
    _REFUSED,
    _TIMED_OUT,
    MS,
    S,
    _between,
    _exponential,
)
from checkers.mixes.spec import MixSpec

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
