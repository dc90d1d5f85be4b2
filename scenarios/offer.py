"""What a system starquake did not start offers a drawn scenario, and a seed's scenario
narrowed to that offer (`starquake explore --target`, docs/explore.md).

A seed's scenario for a target is drawn by `draw_scenario` from the distributions every
explore run draws from, told what the target offers: its workload among those whose system
features the target offers, its faults among those the target's nodes can take (none
without node controls). What the draw then says of a deployment is narrowed to what the
target is: its clusters, how many nodes of each role, its session timeout, and the
broker's deduplication off (`without_deduplication` says why); the liveness
bound follows, and a broker is held to shutting down only when the target declares it
does (PIP-57). The scenario's `topology.backend` is left as drawn: a run aimed at a target
deploys nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from harness.target import ROLES, Node, Target, TargetCluster
from harness.targets.external.file import Feature
from harness.topology import REFERENCE_BROKER_SETTINGS, Topology
from harness.workloads.registry import ONE_CLUSTER
from harness.workloads.settings import WorkloadSettings
from harness.workloads.shared_knobs import deduplicates
from scenarios.draw import HEALTH_SLACK_S, KINDS, draw_scenario
from scenarios.format import Scenario

KIND_NEEDS: dict[str, tuple[Feature, ...]] = {
    "topic": ("persistent",),
    "contract": ("persistent",),
    "scalable": ("persistent", "scalable"),
    "geo": ("persistent", "geo-replication", "replicated-subscriptions"),
    "migration": ("persistent", "migration"),
}
"""The system features (harness/targets/external/features.py) each workload explore draws
needs of a target: as the conformance feature that runs the same workload needs them."""
DRAWN_FOR = "docker"
"""The backend a target's scenario is drawn for: the one whose own offer excludes no
workload, so that the target's offer alone narrows the draw."""


@dataclass(frozen=True)
class Offer:
    """What a target offers the draws."""

    clusters: tuple[TargetCluster, ...]
    session_timeout_s: float
    metadata_loss_shutdown_s: float | None
    features: frozenset[Feature]
    """The system features it offers (probed, or claimed in its file)."""

    @classmethod
    def of(cls, target: Target, features: Iterable[Feature]) -> Offer:
        return cls(target.clusters, target.session_timeout_s,
                   target.metadata_loss_shutdown_s, frozenset(features))

    @property
    def nodes(self) -> tuple[Node, ...]:
        return tuple(node for cluster in self.clusters for node in cluster.nodes)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The workloads of `KINDS` whose every need is offered."""
        return tuple(kind for kind in KINDS if set(KIND_NEEDS[kind]) <= self.features)


def draw_for_offer(seed: int, offer: Offer, kinds: Sequence[str] = KINDS) -> Scenario:
    """The scenario seed `seed` draws among `kinds` for a target offering `offer` (at least
    one of them)."""
    drawn = draw_scenario(seed, DRAWN_FOR, nodes=offer.nodes,
                          kinds=[kind for kind in offer.kinds if kind in kinds],
                          narrow=lambda scenario: narrowed(scenario, offer))
    return held_to_shutdown(drawn, offer)


def on_clusters(scenario: Scenario, names: tuple[str, ...]) -> Scenario:
    """`scenario` on clusters `names`: the first only for a one-cluster workload, which
    acts on the first."""
    clusters = names[:1] if scenario.workload.kind in ONE_CLUSTER else names
    return dataclasses.replace(scenario,
                               topology=dataclasses.replace(scenario.topology, clusters=clusters))


def narrowed(scenario: Scenario, offer: Offer) -> Scenario:
    """A drawn scenario's deployment narrowed to what `offer` is: its clusters, as many
    nodes of each role as its first cluster has (at least one: a file need not list its
    bookies or ZooKeeper servers), its session timeout, and the defaults of the settings
    only our brokers read (its brokers are not ours, so its scenario file names none)."""
    scenario = on_clusters(scenario, tuple(cluster.name for cluster in offer.clusters))
    first = offer.clusters[0]
    counts = {role: max(1, len(first.of_role(role))) for role in ROLES}
    ours_only = {name: getattr(Topology(), name) for name in REFERENCE_BROKER_SETTINGS}
    topology = dataclasses.replace(scenario.topology, brokers=counts["broker"],
                                   bookies=counts["bookie"], zookeepers=counts["zookeeper"],
                                   session_timeout_ms=round(1000 * offer.session_timeout_s),
                                   **ours_only)
    return dataclasses.replace(scenario, topology=topology,
                               workload=without_deduplication(scenario.workload))


def without_deduplication(workload: WorkloadSettings) -> WorkloadSettings:
    """No read-only probe tells whether a system deduplicates, and a run that asks one
    that does not would fail to open: a target's draws leave the broker's deduplication
    off (a scenario written for a system that offers it may switch it on)."""
    knobs = workload.knobs
    if not deduplicates(knobs):
        return workload
    return dataclasses.replace(workload, knobs=dataclasses.replace(knobs, deduplication=False))


def held_to_shutdown(scenario: Scenario, offer: Offer) -> Scenario:
    """`zombie-broker` only where the target declares how soon a broker cut from its
    metadata store shuts down, and never under that declared bound: a system that never
    does (Pulsar's `reconnect` policy) is not held to it."""
    declared = offer.metadata_loss_shutdown_s
    bound = scenario.checkers.zombie_broker_bound_ms
    if bound is not None:
        bound = None if declared is None else max(bound, round(1000 * (declared +
                                                                       HEALTH_SLACK_S)))
    return dataclasses.replace(
        scenario, checkers=dataclasses.replace(scenario.checkers, zombie_broker_bound_ms=bound))
