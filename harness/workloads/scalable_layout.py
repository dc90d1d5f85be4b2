"""The layout side of the `scalable` workload: the observer that records every layout epoch
it sees (process `observer`, `layout` with the topic's metadata), and the admin driver that
splits and merges segments at seeded moments (process `admin`, `split` and `merge`, and
with `merge_union_probe` a `probe` after each merge: harness/workloads/merge_probe.py).

The checkers take segment ranges and ancestry from the `layout` events only, so the
observer records the metadata each split or merge answered with as well as what it polls:
an epoch that lasted less than a poll is still recorded.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harness.workloads.base import WorkloadContext
from harness.workloads.loops import seeded_moments
from harness.workloads.merge_probe import MergeProbe
from harness.workloads.scalable_admin import AdminRefused, AdminUnreachable, ScalableTopicAdmin

if TYPE_CHECKING:  # the workload imports this module
    from harness.workloads.scalable import ScalableWorkload

POLL_S = 0.5
MAX_ACTIVE = 4
"""The driver merges rather than splits once this many segments are active."""
SPLIT_SHARE = 0.6
"""Between one and MAX_ACTIVE active segments, the share of changes that are splits."""


class LayoutObserver:
    def __init__(self, context: WorkloadContext, admin: ScalableTopicAdmin) -> None:
        self._context = context
        self._admin = admin
        self._recorded = -1
        self._lock = threading.Lock()

    def saw(self, metadata: dict[str, Any]) -> None:
        """Record `metadata` as a `layout` if its epoch is newer than any recorded."""
        epoch = int(metadata.get("epoch", -1))
        with self._lock:
            if epoch <= self._recorded:
                return
            self._recorded = epoch
            c = self._context
            c.history.record("observer", "ok", "layout", topic=c.topic, cluster=c.cluster,
                             epoch=epoch, detail=metadata)

    def poll(self) -> dict[str, Any] | None:
        """The topic's metadata now (recorded if new), or None when no broker answers."""
        try:
            metadata = self._admin.metadata()
        except (AdminRefused, AdminUnreachable):
            return None
        self.saw(metadata)
        return metadata

    def watch(self, until: float, stop: threading.Event) -> None:
        """Poll until `until` (a `time.monotonic()`) or `stop`."""
        while not stop.wait(POLL_S) and time.monotonic() < until:
            self.poll()


@dataclass(frozen=True)
class LayoutChange:
    f: str
    """`split` or `merge`."""
    segments: tuple[int, ...]

    @property
    def value(self) -> str:
        return ",".join(str(s) for s in self.segments)


def choose_change(rng: random.Random, metadata: dict[str, Any]) -> LayoutChange | None:
    """A split of an active segment with at least two hashes, or a merge of two active
    segments next to each other (active segments tile the hash space, so neighbours in
    range order are adjacent); None when neither is possible."""
    active = sorted((s for s in metadata.get("segments", {}).values()
                     if s.get("state") == "ACTIVE"), key=lambda s: s["hashRange"]["start"])
    splittable = [s["segmentId"] for s in active
                  if s["hashRange"]["end"] > s["hashRange"]["start"]]
    pairs = [(a["segmentId"], b["segmentId"]) for a, b in itertools.pairwise(active)]
    want_split = len(active) < 2 or (len(active) < MAX_ACTIVE and rng.random() < SPLIT_SHARE)
    if splittable and (want_split or not pairs):
        return LayoutChange("split", (rng.choice(splittable),))
    if pairs:
        return LayoutChange("merge", rng.choice(pairs))
    return None


class LayoutDriver:
    """Splits and merges at seeded intervals around `layout_interval_s`, choosing the
    segments from the seed and the layout it finds."""

    def __init__(self, context: WorkloadContext, knobs: ScalableWorkload.Knobs,
                 admin: ScalableTopicAdmin, observer: LayoutObserver) -> None:
        self._context = context
        self._knobs = knobs
        self._admin = admin
        self._observer = observer
        self._rng = random.Random(f"{context.seed}:layout")
        self._probe = MergeProbe(context, admin) if knobs.merge_union_probe else None

    def run(self, deadline: float, stop: threading.Event) -> None:
        """Change the layout until `deadline` (a `time.monotonic()`), or `stop`; called as
        the load starts."""
        knobs = self._knobs
        if knobs.layout_until_s:
            deadline = min(deadline, time.monotonic() + knobs.layout_until_s)
        for _ in seeded_moments(self._rng, knobs.layout_interval_s, deadline, stop):
            metadata = self._observer.poll()
            change = choose_change(self._rng, metadata) if metadata is not None else None
            if change is not None:
                self._apply(change)

    def _apply(self, change: LayoutChange) -> None:
        c = self._context
        fields = {"topic": c.topic, "cluster": c.cluster, "value": change.value}
        prepared = (self._probe.prepare((change.segments[0], change.segments[1]))
                    if self._probe is not None and change.f == "merge" else None)
        c.history.record("admin", "invoke", change.f, **fields)
        try:
            if change.f == "split":
                metadata = self._admin.split(change.segments[0])
            else:
                metadata = self._admin.merge(*change.segments)
        except AdminRefused as exc:
            c.history.record("admin", "fail", change.f, error=f"http-{exc.status}",
                             detail={"reason": exc.reason}, **fields)
            return
        except AdminUnreachable as exc:
            c.history.record("admin", "info", change.f, error="unknown",
                             detail={"reason": str(exc)}, **fields)
            return
        children = metadata["segments"][str(change.segments[0])]["childIds"]
        detail = ({"children": children} if change.f == "split"
                  else {"merged": children[0]})
        c.history.record("admin", "ok", change.f, epoch=metadata["epoch"], detail=detail,
                         **fields)
        self._observer.saw(metadata)
        if self._probe is not None and prepared is not None:
            self._probe.judge(prepared, children[0])
