"""`unlink-replication`: one cluster stops replicating the workload's namespace to
another, through its admin REST API, as an operator who drops a cluster from the
namespace's replication clusters does; the end puts it back.

Only the one direction goes: with targets `[b, a]`, b's messages and markers stop
reaching a while a's still reach b. Whatever b writes meanwhile never reaches a, even
after the end, since a replicator added again starts from the topic's end (as Pulsar's
does). Without targets every other cluster stops replicating to the first. It is the
case Pulsar's snapshot timeout is for: a's snapshot requests reach b, and b's answers are
lost, so a request is answered never, not late.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import ClassVar

from harness.admin_api import admin_request
from harness.target import TargetCluster
from nemesis.events import NemesisEvent
from nemesis.faults.base import ClusterPair, FaultContext, FaultPlanError, Surface

Change = Callable[[list[str], str], list[str]]
"""A sender's replication clusters and the receiver's name -> the list to write."""


class UnlinkReplication(ClusterPair):
    name = "unlink-replication"
    op = "unlink-replication"
    keeps_sessions = True
    end_op: ClassVar[str] = "relink-replication"
    outlives_heal: ClassVar[bool] = True
    acts = "stops one cluster replicating to another"
    takes = ("takes two clusters, the one that stops replicating and the one it stops "
             "replicating to, or none (all others stop replicating to the first)")

    def check(self, surface: Surface, key: str) -> None:
        super().check(surface, key)
        if surface.shared_replication_list:
            raise FaultPlanError(
                f"{key}: {self.name} stops one cluster replicating to another, but this "
                f"target's clusters share one list of replication clusters (Apache "
                f"Pulsar's configuration store): dropping a cluster from it deletes the "
                f"namespace's topics in that cluster")

    def inject(self, ctx: FaultContext, targets: tuple[str, ...],
               rng: random.Random) -> NemesisEvent:
        return _relist(self.op, ctx, targets,
                       lambda listed, to: [c for c in listed if c != to])

    def end(self, ctx: FaultContext, targets: tuple[str, ...]) -> NemesisEvent | None:
        return _relist(self.end_op, ctx, targets,
                       lambda listed, to: listed if to in listed else [*listed, to])


def _relist(f: str, ctx: FaultContext, targets: tuple[str, ...],
            change: Change) -> NemesisEvent:
    """Each sending cluster's replication clusters for the workload's namespace, read and
    written back changed; recorded as `f`, with the targets as given (so a reproduced run
    pins them unchanged) and each sender's new list in the detail."""
    namespace = "/".join(ctx.topic.split("://", 1)[-1].split("/")[:2])
    path = f"/admin/v2/namespaces/{namespace}/replication"
    receiver, senders = _receiver_and_senders(ctx.target.clusters, targets)
    lists = {}
    for sender in senders:
        listed = [str(c) for c in admin_request(sender.admin_urls[0], "GET", path)]
        lists[sender.name] = change(listed, receiver.name)
        admin_request(sender.admin_urls[0], "POST", path, lists[sender.name])
    value = f"{','.join(s.name for s in senders)} -> {receiver.name}"
    return NemesisEvent(f, value, targets, {"replication_clusters": lists,
                                            "receiver": receiver.name})


def _receiver_and_senders(clusters: Sequence[TargetCluster], targets: tuple[str, ...]
                          ) -> tuple[TargetCluster, list[TargetCluster]]:
    by_name = {c.name: c for c in clusters}
    if targets:
        return by_name[targets[1]], [by_name[targets[0]]]
    return clusters[0], list(clusters[1:])
