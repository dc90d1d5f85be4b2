"""`cut-wan`: one cluster's nodes from another's, on every network. Without targets the
first cluster is cut from every other; with two cluster names as targets only those two
are cut apart, while any third cluster still hears both (a WAN link lost between two
regions, the case where one region's messages reach a second but not a third)."""

from __future__ import annotations

import random

from nemesis.events import NemesisEvent
from nemesis.faults.base import ClusterPair, FaultContext
from nemesis.faults.partitions import _Partition
from nemesis.partition import Partitioner


class CutWan(_Partition, ClusterPair):
    name = "cut-wan"
    op = "cut-wan"
    end_op = "heal-wan"
    acts = "cuts clusters apart"
    takes = "cuts two clusters apart, or the first from all others without targets"

    def apply(self, partitioner: Partitioner, ctx: FaultContext, targets: tuple[str, ...],
              rng: random.Random) -> NemesisEvent:
        first, *others = ctx.target.clusters
        if targets:
            first, *others = [c for name in targets for c in ctx.target.clusters
                              if c.name == name]
        return partitioner.cut_wan([n.name for n in first.nodes],
                                   [n.name for other in others for n in other.nodes])
