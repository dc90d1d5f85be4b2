"""The injected anomalies: which messages each injection rewrites (disjoint, quiet ones,
so that each adds exactly one counted unit to its checker), the sends it changes, and then
the deliveries and acks it changes."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from checkers.mixes.base import (
    _AUDIT_CLUSTER,
    _CURSOR,
    _FAIL,
    _LIVE,
    _NEVER,
    _OK,
    _QUIET_AFTER,
    _QUIET_BEFORE,
    _SENDS_START,
    _UNAPPLIED,
    CLUSTERS,
    MS,
    S,
    _between,
)
from checkers.mixes.deliveries import _Acks, _Deliveries
from checkers.mixes.padding import _key_hashes
from checkers.mixes.positions import _Positions
from checkers.mixes.run import _Run
from checkers.mixes.sends import _Sends
from checkers.mixes.spec import MixSpec
from checkers.synthetic import INJECTABLE

_ORDER_RUN = 128
"""`order` pairs looked at a time: a run of them taken ends at the first refused, which
among thousands of pairs comes within a few (one shares a key with another)."""


@dataclass
class _Victims:
    """The messages each injection rewrites: disjoint, of distinct keys, and (but for the
    segment rewrites, which only move a send) quiet: sent ok, not the first write of its
    segment, with no failover or change of its consumer from _QUIET_BEFORE before to
    _QUIET_AFTER after, so that it is delivered once in `live` and the client acks it at
    once (its ack no fault touches)."""

    keys: np.ndarray
    """Per message, its key as planned, before `order` gives some a fresh one."""
    used: np.ndarray
    """Per message, whether an injection rewrites it or takes its position."""
    used_keys: np.ndarray
    """Per key (as planned), whether an injection rewrites one of its messages."""
    chosen: dict[str, np.ndarray] = field(default_factory=dict)
    order_later: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """The message sent just after each `order` victim, given the same fresh key."""
    fork_partner: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    """For each `forked-position` victim, the message whose position it takes."""

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
        victims = cls(sends.key.copy(), np.zeros(len(sends.key), dtype=bool),
                      np.zeros(len(sends.hashes), dtype=bool))
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
                taken = victims._take(kind, targets >= 0, count, rng)
                sends.segment[taken] = targets[taken]
            else:
                victims._take(kind, quiet & _extra_condition(kind, run, sends), count, rng)
        sends.outcome[victims.of("failed-delivered")] = _FAIL
        return victims

    def _take(self, kind: str, wanted: np.ndarray, count: int,
              rng: np.random.Generator) -> np.ndarray:
        """`count` of the wanted messages at random, free and each of a key of its own:
        in a random order of them, as taking them one by one would (a key then used)."""
        taken = self._first_free_of_own_keys(rng.permutation(np.flatnonzero(wanted)), count)
        if len(taken) < count:
            raise _too_few(kind, count, len(taken))
        self._use(taken)
        self.chosen[kind] = np.sort(taken)
        return self.chosen[kind]

    def _first_free_of_own_keys(self, candidates: np.ndarray, count: int) -> np.ndarray:
        """The first `count` free candidates whose keys no earlier one has, looked for in
        a prefix of the candidates twice as long each time (most are found in the first)."""
        prefix = 4 * count
        while True:
            head = candidates[:prefix]
            head = head[self._free(head)]
            _, firsts_of_keys = np.unique(self.keys[head], return_index=True)
            if len(firsts_of_keys) >= count or prefix >= len(candidates):
                return np.asarray(head[np.sort(firsts_of_keys)[:count]])
            prefix *= 2

    def _free(self, messages: np.ndarray) -> np.ndarray:
        """Which of the messages no injection touches, nor any other message of its key."""
        return np.asarray(~self.used[messages] & ~self.used_keys[self.keys[messages]])

    def _use(self, messages: np.ndarray) -> None:
        self.used[messages] = True
        self.used_keys[self.keys[messages]] = True

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
        sends.hashes = np.concatenate([sends.hashes, _key_hashes(
            spec, np.arange(len(sends.hashes), fresh_from + count * spec.consumers))])
        candidates = rng.permutation(pairs)
        candidates = candidates[self._free(candidates) & self._free(candidates + 1)]
        earlier = np.zeros(0, dtype=np.int64)
        while len(earlier) < count and len(candidates):
            batch = candidates[:min(count - len(earlier), _ORDER_RUN)]
            taken = self._take_order_run(spec, run, sends, firsts, batch,
                                         fresh_from + len(earlier) * spec.consumers)
            earlier = np.r_[earlier, batch[:taken]]
            candidates = candidates[taken + 1:]
        if len(earlier) < count:
            raise _too_few("order", count, len(earlier))
        self.chosen["order"] = earlier
        self.order_later = self.chosen["order"] + 1

    def _take_order_run(self, spec: MixSpec, run: _Run, sends: _Sends, firsts: np.ndarray,
                        batch: np.ndarray, fresh_from: int) -> int:
        """Take the pairs that start at `batch`, in order, up to the first that taking
        them one by one would refuse: one in use, sharing a key with a pair taken before
        it, or whose fresh key would make it its new segment's first write; how many.
        The n-th pair taken here gets fresh key `fresh_from` + n * consumers + its slot."""
        pairs = np.c_[batch, batch + 1]
        fresh = (fresh_from + np.arange(len(batch)) * spec.consumers
                 + sends.key[batch] % spec.consumers)
        segments = run.layouts.route(np.repeat(sends.hashes[fresh], 2),
                                     sends.invoked[pairs.ravel()]).reshape(pairs.shape)
        refused = (~self._free(pairs).all(axis=1) | _shares_a_key(self.keys[pairs])
                   | (firsts[segments] >= sends.invoked[pairs] - 100 * MS).any(axis=1))
        taken = int(np.argmax(refused)) if refused.any() else len(batch)
        self._use(pairs[:taken])
        sends.segment[pairs[:taken]] = segments[:taken]
        sends.key[pairs[:taken]] = fresh[:taken, None]
        return taken

    def pick_fork_partners(self, sends: _Sends, positions: _Positions) -> None:
        """For each `forked-position` victim, the nearest earlier message of its ledger
        sent ok from the same cluster and touched by no injection: its position is taken.
        Victims that pick one partner leave it to the first of them and pick again."""
        forked = self.of("forked-position")
        self.fork_partner = np.full(len(forked), -1, dtype=np.int64)
        pending = np.arange(len(forked))
        while len(pending):
            picks = self._nearest_free_partners(sends, positions, forked[pending])
            if (picks < 0).any():
                raise _too_few("forked-position", len(forked),
                               int(np.count_nonzero(self.fork_partner >= 0)))
            _, first_pickers = np.unique(picks, return_index=True)
            self.fork_partner[pending[first_pickers]] = picks[first_pickers]
            self.used[picks[first_pickers]] = True
            pending = np.delete(pending, first_pickers)

    def _nearest_free_partners(self, sends: _Sends, positions: _Positions,
                               victims: np.ndarray) -> np.ndarray:
        """Per victim, the nearest partner `pick_fork_partners` may take (-1: none)."""
        picks = np.full(len(victims), -1, dtype=np.int64)
        home = sends.home
        free_ok = (sends.outcome == _OK) & ~self.used
        for cluster in range(len(CLUSTERS)):
            mine = home[victims] == cluster
            picks[mine] = positions.nearest_earlier(victims[mine], sends.segment[victims[mine]],
                                                    cluster, free_ok & (home == cluster))
        return picks


def _too_few(kind: str, wanted: int, found: int) -> ValueError:
    return ValueError(f"too few events to inject {wanted} {kind}: only {found} suitable "
                      f"messages; generate a larger history")


def _shares_a_key(keys: np.ndarray) -> np.ndarray:
    """Per row of keys, whether an earlier row holds one of them."""
    rows = np.repeat(np.arange(len(keys)), keys.shape[1])
    distinct, inverse = np.unique(keys.ravel(), return_inverse=True)
    first_row = np.full(len(distinct), len(keys))
    np.minimum.at(first_row, inverse, rows)
    shares = np.zeros(len(keys), dtype=bool)
    shares[rows[first_row[inverse] < rows]] = True
    return shares


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
