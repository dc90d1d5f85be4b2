"""Partitions of one Target's nodes, each a grudge shape (nemesis/grudge.py) applied
through the Target's network control; each records `partition` and ends with `heal`."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import ClassVar
from urllib.parse import urlsplit

from nemesis.events import NemesisEvent
from nemesis.faults.base import OWNER, Fault, FaultContext, FaultPlanError, Surface
from nemesis.partition import Partitioner

PULSAR_PORT = 6650
"""The binary protocol's port when a service URL names none."""


class _Partition(Fault):
    op = "partition"
    end_op = "heal"
    replaced_by_kin = True
    needs = frozenset({"partition"})

    def inject(self, ctx: FaultContext, targets: tuple[str, ...],
               rng: random.Random) -> NemesisEvent:
        assert ctx.partitioner is not None, "the schedule refuses partitions without a network"
        return self.apply(ctx.partitioner, ctx, targets, rng)

    def apply(self, partitioner: Partitioner, ctx: FaultContext, targets: tuple[str, ...],
              rng: random.Random) -> NemesisEvent:
        raise NotImplementedError

    def end(self, ctx: FaultContext, targets: tuple[str, ...]) -> NemesisEvent | None:
        return ctx.partitioner.heal() if ctx.partitioner is not None else None


class Isolate(_Partition):
    """One node hears nobody and nobody hears it."""

    name = "isolate"
    defaults: ClassVar[tuple[str, ...]] = (OWNER, "broker", "bookie", "zookeeper")

    def check_targets(self, surface: Surface, key: str, targets: Sequence[str]) -> None:
        if len(targets) != 1:
            raise FaultPlanError(f"{key}: {self.name} cuts one node off, got {list(targets)}")

    def apply(self, partitioner: Partitioner, ctx: FaultContext, targets: tuple[str, ...],
              rng: random.Random) -> NemesisEvent:
        return partitioner.isolate(targets[0])


class _OneBroker(_Partition):
    """A partition aimed at one broker: `owner`, `broker` (one drawn from the seed) or a
    broker's name."""

    defaults: ClassVar[tuple[str, ...]] = (OWNER, "broker")
    acts: ClassVar[str]
    """What it does to the broker, for the error on other targets."""

    def check_targets(self, surface: Surface, key: str, targets: Sequence[str]) -> None:
        brokers = [n.name for n in surface.nodes if n.role == "broker"]
        if len(targets) != 1 or targets[0] not in ("broker", *brokers, *surface.broker_aims()):
            raise FaultPlanError(f"{key}: {self.name} {self.acts} (`owner`, `broker` or "
                                 f"one of {brokers}), got {list(targets)}")


class CutClients(_OneBroker):
    """One broker stops hearing the clients on its binary port (its service URL's port):
    every client connection to it goes silent until the client's keep-alive gives up on
    it and reconnects, again and again while the cut lasts, while the broker still hears
    its peers and the metadata store. A cut longer than the client's keep-alive (30 s for
    the official client, twice that at worst) forces the reconnect; a shorter one shows
    what a client does with a connection that stalls."""

    name = "cut-clients"
    needs = frozenset({"cut-clients"})
    keeps_sessions = True
    acts = "cuts the clients from one broker"

    def apply(self, partitioner: Partitioner, ctx: FaultContext, targets: tuple[str, ...],
              rng: random.Random) -> NemesisEvent:
        return partitioner.cut_clients(targets[0], service_port(ctx, targets[0]))


def service_port(ctx: FaultContext, broker: str) -> int:
    """The port of `broker`'s service URL, where the clients reach it."""
    for cluster in ctx.target.clusters:
        for node, url in zip(cluster.of_role("broker"), cluster.service_urls, strict=True):
            if node.name == broker:
                return urlsplit(url).port or PULSAR_PORT
    raise FaultPlanError(f"cut-clients: {broker} is not a broker of the target")


class RandomHalves(_Partition):
    """A minority and a majority, shuffled from the seed."""

    name = "random-halves"

    def apply(self, partitioner: Partitioner, ctx: FaultContext, targets: tuple[str, ...],
              rng: random.Random) -> NemesisEvent:
        return partitioner.random_halves(rng)


class Bridge(_Partition):
    """Two halves that cannot hear each other, and one node that both hear."""

    name = "bridge"

    def apply(self, partitioner: Partitioner, ctx: FaultContext, targets: tuple[str, ...],
              rng: random.Random) -> NemesisEvent:
        return partitioner.bridge(rng)


class MajoritiesRing(_Partition):
    """Every node sees a majority, no two the same one."""

    name = "majorities-ring"

    def apply(self, partitioner: Partitioner, ctx: FaultContext, targets: tuple[str, ...],
              rng: random.Random) -> NemesisEvent:
        return partitioner.majorities_ring(rng)


class _FromZooKeeper(_Partition):
    """A cut between brokers and the metadata store's nodes, which the Target must name."""

    def apply(self, partitioner: Partitioner, ctx: FaultContext, targets: tuple[str, ...],
              rng: random.Random) -> NemesisEvent:
        zookeepers = [n.name for c in ctx.target.clusters for n in c.of_role("zookeeper")]
        return partitioner.brokers_from_zookeeper(self.brokers(ctx, targets), zookeepers)

    def brokers(self, ctx: FaultContext, targets: tuple[str, ...]) -> list[str]:
        raise NotImplementedError

    def check(self, surface: Surface, key: str) -> None:
        if not surface.of_role("zookeeper"):
            raise FaultPlanError(f"{key}: {self.name} needs the metadata store's nodes, and "
                                 f"the target names none")


class BrokersFromZooKeeper(_FromZooKeeper):
    """The brokers cannot reach their metadata store; everything else is intact."""

    name = "brokers-from-zookeeper"

    def brokers(self, ctx: FaultContext, targets: tuple[str, ...]) -> list[str]:
        return [n.name for cluster in ctx.target.clusters for n in cluster.of_role("broker")]


class BrokerFromZooKeeper(_FromZooKeeper, _OneBroker):
    """One broker cannot reach the metadata store, while it still hears the clients and
    its peers: its session is lost, the other brokers take its topics, and PIP-57's
    session policy decides what it does meanwhile (under `reconnect`, shut down once the
    retries are spent, rather than stay up unable to serve)."""

    name = "broker-from-zookeeper"
    acts = "cuts one broker from the metadata store"

    def brokers(self, ctx: FaultContext, targets: tuple[str, ...]) -> list[str]:
        return list(targets)
