"""`live`'s consumers over the run: which incarnation serves each key slot, in which
cluster and when, as crashes and failovers close them and replacements and resubscribes
open new ones."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from checkers.mixes.base import (
    _FOREVER,
    _SENDS_START,
    _SLOT_SPAN,
    CLUSTERS,
    MS,
    S,
    _between,
    _ns,
)
from checkers.mixes.spec import MixSpec


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
