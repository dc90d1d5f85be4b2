"""The nemesis's part of the run: its faults and heals as operations, and the windows in
which they hit the clients of a cluster."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from checkers.mixes.base import _SENDS_START, BROKERS, CLUSTERS, MS, S, _compact
from checkers.mixes.spec import MixSpec
from history.faults import NEMESIS_OPS, heal_of


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
