"""`cut-wan`: one cluster's nodes from another's, on every network. Without targets the
first cluster is cut from every other; with two cluster names as targets only those two
are cut apart, while any third cluster still hears both (a WAN link lost between two
regions, the case where one region's messages reach a second but not a third)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import ClassVar

from nemesis.events import NemesisEvent
from nemesis.faults.base import FaultContext, FaultPlanError, Surface
from nemesis.faults.partitions import _Partition
from nemesis.partition import Partitioner


class CutWan(_Partition):
    name = "cut-wan"
    op = "cut-wan"
    end_op = "heal-wan"
    cluster_targets: ClassVar[bool] = True

    def check(self, surface: Surface, key: str) -> None:
        if len(surface.clusters) < 2:
            raise FaultPlanError(f"{key}: {self.name} cuts clusters apart; the target has "
                                 f"only {surface.clusters}")

    def check_targets(self, surface: Surface, key: str, targets: Sequence[str]) -> None:
        if targets and (len(targets) != 2 or targets[0] == targets[1]):
            raise FaultPlanError(f"{key}: {self.name} cuts two clusters apart, or the first "
                                 f"from all others without targets; got {list(targets)}")

    def apply(self, partitioner: Partitioner, ctx: FaultContext, targets: tuple[str, ...],
              rng: random.Random) -> NemesisEvent:
        first, *others = ctx.target.clusters
        if targets:
            first, *others = [c for name in targets for c in ctx.target.clusters
                              if c.name == name]
        return partitioner.cut_wan([n.name for n in first.nodes],
                                   [n.name for other in others for n in other.nodes])
