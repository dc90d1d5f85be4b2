"""What a fault kind is: a unit holding its name, what it needs of a Target, how it picks
its nodes, how it injects and ends, and the history operation it records (whose colour
the report draws).

Jepsen's nemesis packages are the model: one unit per fault kind, and a registry
(`nemesis.faults.FAULTS`) that the scenario format, the schedule and the runner all take
fault kinds from. A checker or a report never sees a fault kind: it sees the history
operation the kind records (`history.faults`), which is all a third party's history has.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from harness.target import Capability, Node, NodeControl, Role, Target
from history.errors import BadInput
from nemesis.events import NemesisEvent
from nemesis.partition import Partitioner
from nemesis.process import ProcessFaults

OWNER = "owner"
CONTROLLER_LEADER = "controller-leader"
RUNTIME_TARGETS = (OWNER, CONTROLLER_LEADER)
"""Targets the system decides at run time: resolved when the fault starts, by asking the
brokers (`owner`: the broker owning the workload's topic; `controller-leader`: the broker
leading the scalable topic's controller)."""


class FaultPlanError(BadInput):
    """A fault that cannot be planned on this Target: the message names the key."""


@dataclass(frozen=True)
class Surface:
    """What a schedule may aim at: the Target's nodes (as planned, before anything
    starts) and what the run offers besides."""

    nodes: tuple[Node, ...]
    controller: bool = False
    """A scalable topic's controller exists (the scalable workload runs)."""
    shared_replication_list: bool = False
    """The clusters share one list of replication clusters (`Backend.shared_replication_list`)."""

    @property
    def clusters(self) -> list[str]:
        return list(dict.fromkeys(node.cluster for node in self.nodes))

    def of_role(self, role: Role, cluster: str | None = None) -> list[str]:
        """Names of the nodes of `role` in `cluster` (by default the first)."""
        cluster = cluster or self.clusters[0]
        return [n.name for n in self.nodes if n.role == role and n.cluster == cluster]

    def broker_aims(self) -> list[str]:
        """What names a broker: each broker of every cluster, `owner`, and
        `controller-leader` where there is a controller."""
        brokers = [n.name for n in self.nodes if n.role == "broker"]
        return [*brokers, OWNER, *([CONTROLLER_LEADER] if self.controller else [])]

    def can(self, name: str, capability: Capability) -> bool:
        return any(n.name == name and capability in n.capabilities for n in self.nodes)

    def anyone_can(self, capability: Capability, role: Role | None = None) -> bool:
        return any(capability in n.capabilities and role in (None, n.role)
                   for n in self.nodes)


@dataclass
class FaultContext:
    """What a fault acts through while a run goes on."""

    target: Target
    processes: ProcessFaults
    partitioner: Partitioner | None
    """None where the Target offers no network control."""
    topic: str
    """The workload's topic: whose owner `owner` means, and whose namespace
    `unlink-replication` changes."""

    def nodes(self, names: Sequence[str]) -> list[NodeControl]:
        return [self.target.control(name) for name in names]


class Fault:
    """One fault kind. Subclasses set the class attributes and `inject`; faults with an
    end (`op` has a heal) override `end`."""

    name: ClassVar[str]
    op: ClassVar[str]
    """The history's nemesis operation it records (`history.faults.NEMESIS_OPS`)."""
    needs: ClassVar[frozenset[Capability]] = frozenset()
    """What each node it acts on must offer; for shapes, what the Target's network must."""
    defaults: ClassVar[tuple[str, ...]] = ()
    """What it picks among (one pick, from the seed) when the scenario names no target:
    node roles, node names or runtime targets. Empty: a shape over the whole Target,
    which takes no targets."""
    cluster_targets: ClassVar[bool] = False
    """Its targets, optional, name clusters rather than nodes (`cut-wan`)."""
    strikes_several: ClassVar[bool] = False
    """It acts on each of several targets at once (a random schedule's `nodes_at_once`)."""
    end_op: ClassVar[str | None] = None
    """The history operation its end records (`start`, `resume`, `heal`, ...); None for a
    fault that is over once injected."""
    outlives_heal: ClassVar[bool] = False
    """The final heal's network and process repairs do not undo it, so the runner ends it
    there itself when it is still on (a run cut short)."""
    replaced_by_kin: ClassVar[bool] = False
    """The next fault of its family replaces it (a network cut replaces the one in force,
    and any cut's end heals the whole network), so it cannot stay on beneath others as a
    random schedule's `background`."""
    keeps_sessions: ClassVar[bool] = False
    """No broker it acts on lives on without its metadata session: a killed one starts
    again with a new session, and some faults leave sessions alone. False for anything
    that may end a living broker's session (an expiry, a pause or a cut from ZooKeeper
    past the session timeout), which under PIP-57's `shutdown` halts the broker."""

    def check(self, surface: Surface, key: str) -> None:
        """Raise FaultPlanError naming `key` when `surface` cannot take this fault at all
        (beyond the capabilities in `needs`, which the schedule checks)."""

    def check_targets(self, surface: Surface, key: str, targets: Sequence[str]) -> None:
        """Raise FaultPlanError naming `key` when this fault cannot act on `targets`."""

    def inject(self, ctx: FaultContext, targets: tuple[str, ...],
               rng: random.Random) -> NemesisEvent:
        raise NotImplementedError

    def end(self, ctx: FaultContext, targets: tuple[str, ...]) -> NemesisEvent | None:
        """Undo it before the final heal; None when there is nothing to undo."""
        return None

    @property
    def takes_targets(self) -> bool:
        return bool(self.defaults)

    @property
    def instant(self) -> bool:
        return self.end_op is None

    @property
    def can_lie_beneath(self) -> bool:
        """It can be a random schedule's `background`: it lasts, and nothing but its own
        end ends it."""
        return not self.instant and not self.replaced_by_kin


class ClusterPair(Fault):
    """A fault between clusters: two named as targets, or without targets the first and
    all the others; the Target needs two clusters or more."""

    cluster_targets: ClassVar[bool] = True
    acts: ClassVar[str]
    """What it does, for the error on a Target of one cluster."""
    takes: ClassVar[str]
    """What its targets are, for the error on targets that are not two clusters."""

    def check(self, surface: Surface, key: str) -> None:
        if len(surface.clusters) < 2:
            raise FaultPlanError(f"{key}: {self.name} {self.acts}; the target has only "
                                 f"{surface.clusters}")

    def check_targets(self, surface: Surface, key: str, targets: Sequence[str]) -> None:
        if targets and (len(targets) != 2 or targets[0] == targets[1]):
            raise FaultPlanError(f"{key}: {self.name} {self.takes}; got {list(targets)}")
