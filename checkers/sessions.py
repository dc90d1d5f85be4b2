"""A consumer's segments moved while nothing called for it: `reassigned`.

PIP-468's ordered subscriptions deal segments out to registered consumers, and the
registration is a session: a consumer whose connection drops, or whose controller's
leader dies, and that registers again within the grace period, resumes with the same
assignment, "no rebalance, no other consumer disturbed" ("Consumer Session Lifecycle").
Segments move only when what is dealt out changes (a split, a merge, a parent drained) or
who it is dealt to changes (a consumer joins, unregisters, or stays away past the grace
period). A controller that forgets sessions instead hands a reconnecting consumer's
segments to the others and takes them back a moment later. Nothing is lost or reordered
by that, each segment's Failover subscription sees to it, but every consumer is
disturbed, messages in flight are delivered again elsewhere, and a consumer's own state
keyed by segment is thrown away: the harm the session exists to prevent.

The history shows each consumer's assignment: the `ok` of each `register` (the answer)
and each `assign` (a push). A change of one consumer's assignment is an anomaly when the
union of every consumer's latest assignment is the same before and after the rebalance it
belongs to (what is dealt out did not change), however the pushes are told apart into
rebalances (`_rebalances`), and no consumer of the subscription began
to join (its first `register`'s invoke) or to leave (an `unregister`'s invoke) since that
consumer's last change that such an event explained (each explains one change of each
other consumer: the rebalance it causes). A consumer away past the grace period is
evicted legitimately, and the history cannot tell how long that is; no run of ours keeps
a consumer away that long, and docs/history.md says so.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from pyspark.sql import DataFrame

from checkers.anomaly import ANOMALY_ROWS, CheckSettings
from checkers.frames import HistoryFrames, SmallFact
from history.schema import detail_object

CHECKER = "reassigned"
Scope = tuple[str, str | None, str | None, str | None]
"""Run, topic, subscription and cluster: one subscription's consumers."""


@dataclass(frozen=True)
class _Assigned:
    index: int
    time: int
    """When the consumer heard it (nanoseconds)."""
    consumer: str
    segments: frozenset[int]
    epoch: int | None
    """The layout epoch the assignment was dealt for, when the history says."""


REBALANCE_SPREAD_NS = 250_000_000
"""How far apart two pushes may be heard and still be told one rebalance's in the second
way of grouping them (`_rebalances`). One rebalance's pushes leave the controller together
and were heard within milliseconds of each other in our runs; two rebalances of one layout
(a parent drained, then another) came a second apart."""


@dataclass(frozen=True)
class Reassignment:
    scope: Scope
    consumer: str
    before: frozenset[int]
    after: frozenset[int]
    previous_index: int
    index: int

    def example(self) -> dict[str, object]:
        return {"events": [self.previous_index, self.index], "consumer": self.consumer,
                "subscription": self.scope[2], "before": sorted(self.before),
                "after": sorted(self.after)}


def _segments(detail: str | None) -> frozenset[int]:
    return frozenset(int(s) for s in detail_object(detail).get("segments", []))


def _scope(fact: SmallFact) -> Scope:
    return (fact.run, fact.topic, fact.subscription, fact.cluster)


def _membership_changes(facts: list[SmallFact]) -> list[tuple[int, str]]:
    """When consumers began to join or leave, by index: a consumer's first `register`
    invoke, each `unregister` invoke."""
    joined: dict[str, int] = {}
    left = []
    for fact in facts:
        if fact.consumer is None:
            continue
        if fact.f == "unregister":
            left.append((fact.index, fact.consumer))
        elif fact.f == "register":
            joined[fact.consumer] = min(joined.get(fact.consumer, fact.index), fact.index)
    return sorted([(index, consumer) for consumer, index in joined.items()] + left)


def _assignments(facts: list[SmallFact]) -> list[_Assigned]:
    assigned = []
    for fact in facts:
        if fact.consumer is None:
            continue
        if fact.f == "assign":
            assigned.append(_Assigned(fact.index, fact.time, fact.consumer,
                                      _segments(fact.detail), fact.epoch))
        elif fact.f == "register" and fact.outcome == "ok" and fact.done_index is not None:
            assigned.append(_Assigned(fact.done_index, fact.done_time or fact.time,
                                      fact.consumer, _segments(fact.done_detail),
                                      fact.done_epoch))
    return sorted(assigned, key=lambda a: a.index)


def _left(facts: list[SmallFact]) -> dict[int, str]:
    """Completed unregistrations: event index -> the consumer, which holds nothing after."""
    return {f.done_index: f.consumer for f in facts
            if f.f == "unregister" and f.outcome == "ok" and f.done_index is not None
            and f.consumer is not None}


def _judge(scope: Scope, facts: list[SmallFact]) -> list[Reassignment]:
    """The changes found whichever way the pushes are grouped into rebalances: the
    history does not say where one ends, and a change that is an anomaly in one grouping
    may be what another rebalance dealt in the other."""
    changes = _membership_changes(facts)
    left = _left(facts)
    assigned = _assignments(facts)
    by_epoch, by_time = (_found(scope, _rebalances(assigned, left, spread), changes)
                         for spread in (None, REBALANCE_SPREAD_NS))
    return [found for found in by_epoch if found in by_time]


def _found(scope: Scope, rebalances: list[list[_Assigned] | str],
           changes: list[tuple[int, str]]) -> list[Reassignment]:
    """A membership change explains the first change of each other consumer's assignment
    at or after it began (its rebalance reaches them while the joiner's answer, or the
    leaver's, may still be on its way), and no later one. What is dealt out is compared
    across one rebalance's pushes, not push by push: a rebalance that deals fewer segments
    may move one from c1 to c0 and leave c1 nothing, and c1's push alone, seen after c0's,
    would look like a move with the same segments dealt."""
    current: dict[str, frozenset[int]] = {}
    since: dict[str, int] = {}
    explained_up_to: dict[str, int] = defaultdict(lambda: -1)
    """Per consumer: the index of the last membership change one of its changes used."""
    found = []
    for batch in rebalances:
        if isinstance(batch, str):
            current.pop(batch, None)
            continue
        before = frozenset().union(*current.values())
        after = frozenset().union(*{**current, **{a.consumer: a.segments for a in batch}
                                    }.values())
        for step in batch:
            old = current.get(step.consumer)
            if old is None:  # its first: what changed before is no concern of its
                explained_up_to[step.consumer] = step.index
            elif old != step.segments:
                unused = [start for start, member in changes
                          if explained_up_to[step.consumer] < start <= step.index
                          and member != step.consumer]
                if unused:
                    explained_up_to[step.consumer] = max(unused)
                elif before == after:
                    found.append(Reassignment(scope, step.consumer, old, step.segments,
                                              since[step.consumer], step.index))
            current[step.consumer] = step.segments
            since[step.consumer] = step.index
    return found


def _rebalances(assigned: list[_Assigned], left: dict[int, str], spread_ns: int | None
                ) -> list[list[_Assigned] | str]:
    """The assignments in the order they were dealt (`_dealing_order`), grouped as one
    rebalance's pushes: consecutive ones, each to a different consumer and for the same
    layout epoch (when both name one), and, given `spread_ns`, each heard within it of the
    one before; a consumer that left (its name) stands alone. A rebalance pushes only to
    the consumers whose segments change, so without the epoch the last pushes of one
    layout's rebalance and the first of the next would pass for one rebalance when their
    consumers differ, and a segment leaving one consumer in the first would look dealt
    twice. Two rebalances of one layout (each parent drained deals again) share its epoch:
    of c1 and c2 pushed in the first and c0, c1 and c2 a second later, c0's joined the
    first, and c1's move in the second, with c0's new segments counted before it, looked
    like the same segments dealt (`reassigned` in a correct run). Heard a second apart,
    they are told apart by time; but pushes of one rebalance can be heard far apart, a
    late answer among them, so neither grouping is sure and `_judge` takes both."""
    grouped: list[list[_Assigned] | str] = []
    for step in _dealing_order(assigned, left):
        last = grouped[-1] if grouped else None
        if isinstance(step, str):
            grouped.append(step)
        elif isinstance(last, list) and all(a.consumer != step.consumer
                                            and _same_epoch(a, step) for a in last) and (
                spread_ns is None or abs(step.time - last[-1].time) <= spread_ns):
            last.append(step)
        else:
            grouped.append([step])
    return grouped


def _dealing_order(assigned: list[_Assigned], left: dict[int, str]
                   ) -> list[_Assigned | str]:
    """Assignments and departures by the layout epoch they were dealt for, then by index.
    The history has them in the order the consumers heard them, and a registration's
    answer can come late: after a controller's failover, one consumer's answer for the
    layout of epoch 5 came after another consumer's push for epoch 6, and in arrival order
    the epoch-5 rebalance split in two around it, each half dealing the same segments
    (`reassigned` in a correct run). Without epochs, or where one is missing, the epoch in
    force at that index (the highest heard so far) stands in, so a history without them
    keeps its index order."""
    steps: list[tuple[int, _Assigned | str]] = sorted(
        [(a.index, a) for a in assigned] + list(left.items()), key=lambda step: step[0])
    keyed = []
    in_force = -1
    for index, step in steps:
        epoch = step.epoch if isinstance(step, _Assigned) else None
        in_force = max(in_force, -1 if epoch is None else epoch)
        keyed.append(((in_force if epoch is None else epoch, index), step))
    return [step for _, step in sorted(keyed, key=lambda item: item[0])]


def _same_epoch(one: _Assigned, other: _Assigned) -> bool:
    return one.epoch is None or other.epoch is None or one.epoch == other.epoch


def reassignments(facts: Iterable[SmallFact]) -> list[Reassignment]:
    """Every anomalous change of a consumer's assignment (see the module's docstring)."""
    by_scope: dict[Scope, list[SmallFact]] = defaultdict(list)
    for fact in facts:
        by_scope[_scope(fact)].append(fact)
    return [found for scope, scoped in sorted(by_scope.items(), key=lambda i: str(i[0]))
            for found in _judge(scope, scoped)]


def reassigned(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    """The anomaly rows of `reassigned`: one per assignment change, found on the driver
    (a run has a few assignments per consumer and layout)."""
    rows = [(CHECKER, r.scope[0], r.index, 1, json.dumps(r.example()))
            for r in reassignments(frames.sessions)]
    return frames.spark.createDataFrame(rows, ANOMALY_ROWS)
