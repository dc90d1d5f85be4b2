"""The topic's segments over the run: the splits and merges the admin makes, the layout
of each epoch (and its document, as the metadata store holds it), and which segment a
key's send goes to at a time."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from checkers.mixes.base import _SENDS_START, MS, _compact
from checkers.mixes.spec import MixSpec
from history.schema import HASH_SPACE


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
