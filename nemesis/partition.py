"""Network partitions: grudges applied through a Target's network control.

A grudge (nemesis/grudge.py) says which nodes each node must not hear from; the
`Partitioner` turns one grudge at a time into drops on the Target's `NetworkControl`
(iptables in containers' namespaces, or a third party's own hook) and lifts them on heal.
A new partition replaces the previous one on every node.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from harness.target import NetworkControl
from history.faults import heal_of
from nemesis import grudge as shapes
from nemesis.events import NemesisEvent, grudge_detail
from nemesis.grudge import Grudge

T = TypeVar("T")


def _history_op(shape: str) -> str:
    """The history names a WAN cut apart from other partitions."""
    return "cut-wan" if shape == "cut-wan" else "partition"


def _each(action: Callable[[T], object], items: Iterable[T]) -> None:
    items = list(items)
    if items:
        with ThreadPoolExecutor(max_workers=min(8, len(items))) as pool:
            for future in [pool.submit(action, item) for item in items]:
                future.result()


class Partitioner:
    """Applies one grudge at a time to `nodes` and heals it.

    The shapes of nemesis/grudge.py are offered as methods taking node names, each
    returning the event to record. A new partition replaces the previous one on every node
    (a node no longer in the grudge is healed).
    """

    def __init__(self, network: NetworkControl) -> None:
        self._network = network
        self._nodes = set(network.names)
        self._touched: set[str] = set()
        self._active: str | None = None
        self.grudge: Grudge = {}

    @property
    def names(self) -> list[str]:
        return self._network.names

    def partition(self, grudge: Mapping[str, Iterable[str]], shape: str = "partition",
                  targets: Sequence[str] = ()) -> NemesisEvent:
        """Make every node drop what it receives from the nodes its grudge names. The
        event's targets are `targets`, by default every node the grudge cuts."""
        named = set(grudge).union(*(set(others) for others in grudge.values()))
        unknown = named - set(self._nodes)
        if unknown:
            raise shapes.ShapeNotApplicable(f"{shape}: unknown nodes {sorted(unknown)}; "
                                            f"nodes are {self.names}")
        wanted = {node: frozenset(others) for node, others in grudge.items() if others}
        changed = set(wanted) | (self._touched - set(wanted))

        def apply(name: str) -> None:
            self._network.drop(name, wanted.get(name, frozenset()))

        _each(apply, sorted(changed))
        self._touched |= set(wanted)
        self.grudge, self._active = wanted, shape
        return NemesisEvent(_history_op(shape), shape, tuple(targets or sorted(wanted)),
                            {"grudge": grudge_detail(wanted)})

    def heal(self) -> NemesisEvent:
        """Empty our chain on every node we ever touched: all traffic flows again."""
        _each(lambda name: self._network.drop(name, ()), sorted(self._touched))
        healed = tuple(sorted(self.grudge))
        heal_op = heal_of(_history_op(self._active or "partition"))
        self.grudge, self._active = {}, None
        return NemesisEvent(heal_op or "heal", "heal", healed)

    def stall_port(self, sender: str, receiver: str, port: int) -> NemesisEvent:
        """One direction of one service stalls: `receiver` drops the TCP segments that
        `sender` addresses to its `port`, so connections `sender` opens to that port hang
        while connections `receiver` opens to `sender` (whose segments come back *from*
        the port they reached) keep working, and every other node is untouched. Geo
        replication shows why it matters: one replicator stalls, the opposite one does not.
        It replaces any partition in force; `heal()` lifts it."""
        unknown = {sender, receiver} - set(self._nodes)
        if unknown:
            raise shapes.ShapeNotApplicable(f"stall-port: unknown nodes {sorted(unknown)}; "
                                            f"nodes are {self.names}")
        if self._touched:
            self.heal()
        self._network.drop(receiver, [sender], to_port=port)
        self._touched.add(receiver)
        self._active = "stall-port"
        return NemesisEvent("partition", "stall-port", (receiver,),
                            {"sender": sender, "port": port})

    def cut_clients(self, node: str, port: int) -> NemesisEvent:
        """`node` drops what anyone but the Target's nodes sends to its `port`: the
        workloads' clients lose it and, once their keep-alive gives up on the silent
        connection, reconnect, while its peers and every other node are untouched. It
        replaces any partition in force; `heal()` lifts it."""
        if node not in self._nodes:
            raise shapes.ShapeNotApplicable(f"cut-clients: unknown node {node}; nodes are "
                                            f"{self.names}")
        if self._touched:
            self.heal()
        self._network.cut_clients(node, port)
        self._touched.add(node)
        self._active = "cut-clients"
        return NemesisEvent("partition", "cut-clients", (node,), {"port": port})

    # --- the shapes -------------------------------------------------------------------------

    def isolate(self, target: str, among: Iterable[str] | None = None) -> NemesisEvent:
        """`target` cut from every other node (of `among`, default all). Isolating the
        controller leader is this, with the leader's node as target."""
        return self.partition(shapes.isolate(among or self.names, target), "isolate",
                              targets=(target,))

    def random_halves(self, rng: random.Random, among: Iterable[str] | None = None
                      ) -> NemesisEvent:
        return self.partition(shapes.random_halves(among or self.names, rng), "random-halves")

    def bridge(self, rng: random.Random, among: Iterable[str] | None = None) -> NemesisEvent:
        return self.partition(shapes.bridge(among or self.names, rng), "bridge")

    def majorities_ring(self, rng: random.Random, among: Iterable[str] | None = None
                        ) -> NemesisEvent:
        return self.partition(shapes.majorities_ring(among or self.names, rng),
                              "majorities-ring")

    def brokers_from_zookeeper(self, brokers: Iterable[str], zookeepers: Iterable[str]
                               ) -> NemesisEvent:
        """The brokers cannot reach ZooKeeper (nor it them); everything else is intact."""
        return self.partition(shapes.cut(brokers, zookeepers), "brokers-from-zookeeper")

    def cut_wan(self, cluster_a: Iterable[str], cluster_b: Iterable[str]) -> NemesisEvent:
        """No node of one cluster hears any node of the other, on any network."""
        return self.partition(shapes.cut(cluster_a, cluster_b), "cut-wan")
