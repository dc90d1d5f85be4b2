"""`cut-wan`: the first cluster's nodes from every other cluster's, on every network."""

from __future__ import annotations

import random

from nemesis.events import NemesisEvent
from nemesis.faults.base import FaultContext, FaultPlanError, Surface
from nemesis.faults.partitions import _Partition
from nemesis.partition import Partitioner


class CutWan(_Partition):
    name = "cut-wan"
    op = "cut-wan"
    end_op = "heal-wan"

    def check(self, surface: Surface, key: str) -> None:
        if len(surface.clusters) < 2:
            raise FaultPlanError(f"{key}: {self.name} cuts clusters apart; the target has "
                                 f"only {surface.clusters}")

    def apply(self, partitioner: Partitioner, ctx: FaultContext, targets: tuple[str, ...],
              rng: random.Random) -> NemesisEvent:
        first, *others = ctx.target.clusters
        return partitioner.cut_wan([n.name for n in first.nodes],
                                   [n.name for other in others for n in other.nodes])
