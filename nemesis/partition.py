"""Network partitions: grudges applied with iptables in the nodes' network namespaces.

Every rule we add lives in one chain of our own, `STARQUAKE`, which the first partition
creates in a node's namespace and jumps to from the top of INPUT. A node's drops are
replaced atomically with one `iptables-restore --noflush` (declaring a chain in a restore
flushes it), and heal restores an empty chain: exactly our rules go, whatever else the
namespace holds (the engine's DNS rules live in the nat table and are never touched).

Only INPUT is filtered, as Jepsen does: a node drops what it receives from the nodes it
holds a grudge against. The host's own traffic (the clients the harness runs) is never
dropped, since no grudge names it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, TypeVar

from nemesis import grudge as shapes
from nemesis.events import NemesisEvent, grudge_detail
from nemesis.grudge import Grudge
from history.errors import EnvironmentProblem

CHAIN = "STARQUAKE"
# $1 is the iptables-restore input; one exec per node per change.
_APPLY_SCRIPT = (
    f"iptables -w -N {CHAIN} 2>/dev/null; "
    f"iptables -w -C INPUT -j {CHAIN} 2>/dev/null || iptables -w -I INPUT 1 -j {CHAIN} || exit 1; "
    'printf "%s" "$1" | iptables-restore -w --noflush'
)
# The history catalogue names a WAN cut and its heal apart from other partitions.
_HISTORY_OPS = {"cut-wan": ("cut-wan", "heal-wan")}

T = TypeVar("T")


class PartitionFailed(EnvironmentProblem):
    """iptables failed in a node's namespace; the message has its output."""


class NetworkNode(Protocol):
    """What a partition needs of a node (harness.containers.ContainerNode has it)."""

    @property
    def name(self) -> str: ...

    @property
    def ips(self) -> tuple[str, ...]: ...

    def run_in_netns(self, argv: Sequence[str]) -> tuple[int, str]: ...


def restore_input(drop_from: Iterable[str], to_port: int | None = None) -> str:
    """The iptables-restore text that makes our chain drop packets from `drop_from`: all
    of them, or with `to_port` only TCP segments addressed to that port."""
    match = "" if to_port is None else f" -p tcp --dport {to_port}"
    lines = ["*filter", f":{CHAIN} - [0:0]"]
    lines += [f"-A {CHAIN} -s {ip}/32{match} -j DROP" for ip in sorted(drop_from)]
    return "\n".join([*lines, "COMMIT", ""])


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

    def __init__(self, nodes: Iterable[NetworkNode]) -> None:
        self._nodes = {node.name: node for node in nodes}
        self._touched: set[str] = set()
        self._active: str | None = None
        self.grudge: Grudge = {}

    @property
    def names(self) -> list[str]:
        return list(self._nodes)

    def _apply_to(self, name: str, drop_from: Iterable[str], to_port: int | None = None
                  ) -> None:
        node = self._nodes[name]
        code, output = node.run_in_netns(["sh", "-c", _APPLY_SCRIPT, "sh",
                                          restore_input(drop_from, to_port)])
        if code != 0:
            raise PartitionFailed(f"iptables in {name}'s network namespace exited {code}: "
                                  f"{output.strip()}")

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
            others = wanted.get(name, frozenset())
            self._apply_to(name, [ip for other in others for ip in self._nodes[other].ips])

        _each(apply, sorted(changed))
        self._touched |= set(wanted)
        self.grudge, self._active = wanted, shape
        cut_op = _HISTORY_OPS.get(shape, ("partition", "heal"))[0]
        return NemesisEvent(cut_op, shape, tuple(targets or sorted(wanted)),
                            {"grudge": grudge_detail(wanted)})

    def heal(self) -> NemesisEvent:
        """Empty our chain on every node we ever touched: all traffic flows again."""
        _each(lambda name: self._apply_to(name, ()), sorted(self._touched))
        healed = tuple(sorted(self.grudge))
        heal_op = _HISTORY_OPS.get(self._active or "", ("partition", "heal"))[1]
        self.grudge, self._active = {}, None
        return NemesisEvent(heal_op, "heal", healed)

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
        self._apply_to(receiver, self._nodes[sender].ips, to_port=port)
        self._touched.add(receiver)
        self._active = "stall-port"
        return NemesisEvent("partition", "stall-port", (receiver,),
                            {"sender": sender, "port": port})

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
