"""The conformance suite's features: what each one checks, what it needs of a Target, and
the scenario that checks it (a packaged file under `scenarios/conformance/`).

A feature is one short seeded scenario through the Target's public interfaces, judged by
the ordinary checkers. Before anything runs, each feature is planned against the Target:
a feature whose system capability the Target lacks (`persistent`, `scalable`,
`geo-replication`, `replicated-subscriptions`, `migration`, `authentication`) is
*unsupported*; a supported
feature whose fault the Target cannot take (no node offers the control it needs) is
*skipped*, with the reason; the rest run.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from harness.target import Target
from harness.targets.external.file import Feature as SystemFeature
from nemesis.faults.session import OUTLAST
from scenarios.catalogue import resolve_scenario
from scenarios.draw import HEALTH_SLACK_S
from scenarios.format import Scenario, ScenarioError, load_scenario
from scenarios.offer import on_clusters
from scenarios.plan import schedule_for

SETTLE_S = 8.0
"""Load kept up after a fault of a stretched schedule ends, before the final heal."""
CUT_BEYOND_BOUND_S = 10.0
"""How much longer than that bound a broker stays cut, beyond the session timeout it may
take to notice the cut: a broker that never shuts down is unhealthy for about the cut less
that time, well past the bound."""


@dataclass(frozen=True)
class Feature:
    name: str
    """Also the packaged scenario that checks it: `scenarios/conformance/<name>.toml`."""
    needs: tuple[SystemFeature, ...]
    """The system features the Target must offer (`harness.targets.external.file.FEATURES`:
    probed, or claimed in the target file)."""
    checks: str
    """What it checks, in one line, for the table and the docs."""
    outlast_session: bool = False
    """Its faults must last past the Target's metadata-store session timeout: the
    durations of the scenario's timeline (and the run, to fit) are stretched to it."""
    shutdown_bound: bool = False
    """It holds the Target to its `metadata_loss_shutdown_s` (`zombie-broker`): a Target
    that declares none does not support it, and one that does has the bound and the cut
    fitted to it."""

    def scenario_path(self) -> Path:
        return resolve_scenario(f"conformance/{self.name}")


FEATURES: tuple[Feature, ...] = (
    Feature("client-contract", ("persistent",),
            "the official client's contract without faults: queues, acks, redelivery, "
            "readers, seek, producer access, delayed delivery, large messages, prompt "
            "refusals, last message id, termination"),
    Feature("durability-kill", ("persistent",),
            "brokers killed and restarted: nothing acknowledged lost, no forked position"),
    Feature("durability-storage-kill", ("persistent",),
            "a bookie and the topic's owner killed together: nothing acknowledged lost"),
    Feature("durability-pause", ("persistent",),
            "brokers paused past the metadata session: nothing lost, no forked position",
            outlast_session=True),
    Feature("durability-partition", ("persistent",),
            "the topic's owner cut off the network: nothing lost, no forked position"),
    Feature("durability-metadata-cut", ("persistent",),
            "brokers cut from the metadata store past the session: nothing lost, "
            "no forked position", outlast_session=True),
    Feature("metadata-loss-shutdown", ("persistent",),
            "a broker cut from the metadata store shuts down within the bound the target "
            "declares, instead of staying up unable to serve", shutdown_bound=True),
    Feature("scalable-topics", ("scalable",),
            "PIP-468 splits and merges under load: no dual-writable segment, key order "
            "across splits, nothing lost, merges keep both parents' subscriptions"),
    Feature("geo-replication", ("geo-replication",
                                                   "replicated-subscriptions"),
            "a replicated subscription failing over between clusters: nothing lost, "
            "duplicates only within the window"),
    Feature("tenant-migration", ("migration",),
            "a tenant moved between clusters behind the lookup service: nothing lost"),
    Feature("authentication", ("persistent", "authentication"),
            "a client without a token, or with a forged one, gets no producer; the admin "
            "API answers 401 without one; a role granted nothing cannot produce"),
)
FEATURE_NAMES = tuple(f.name for f in FEATURES)


@dataclass(frozen=True)
class PlannedFeature:
    """A feature as it will run against one Target, or why it will not."""

    feature: Feature
    status: str
    """`run`, `unsupported` or `skipped`."""
    reason: str = ""
    scenario: Scenario | None = None
    """The scenario fitted to the Target (`run` only)."""


def plan_feature(feature: Feature, target: Target,
                 support: dict[SystemFeature, tuple[bool, str]],
                 seed: int) -> PlannedFeature:
    """What becomes of `feature` on `target`, whose system features are `support`
    (feature -> offered, why)."""
    for need in feature.needs:
        offered, why = support[need]
        if not offered:
            return PlannedFeature(feature, "unsupported", f"{need}: {why}")
    if feature.shutdown_bound and target.metadata_loss_shutdown_s is None:
        return PlannedFeature(feature, "unsupported",
                              "the target declares no metadata_loss_shutdown_s")
    scenario = fit(load_scenario(feature.scenario_path()), feature, target)
    nodes = [node for cluster in target.clusters for node in cluster.nodes]
    try:
        schedule_for(scenario, seed, nodes=nodes)
    except ScenarioError as exc:
        # The message names the file and key; the row needs only what the target lacks.
        return PlannedFeature(feature, "skipped", str(exc).split(": ", 2)[-1])
    return PlannedFeature(feature, "run", scenario=scenario)


def fit(scenario: Scenario, feature: Feature, target: Target) -> Scenario:
    """The scenario as it runs against `target`: the target's cluster names (the first
    only, for a one-cluster workload, which acts on the first); faults that outlast its
    metadata session, and a `zombie-broker` bound of its own, where the feature asks for
    them."""
    scenario = on_clusters(scenario, tuple(cluster.name for cluster in target.clusters))
    if feature.outlast_session:
        scenario = _stretched(scenario, round(OUTLAST * target.session_timeout_s, 1))
    if feature.shutdown_bound:
        scenario = _held_to_shutdown_bound(scenario, target)
    return scenario


def _held_to_shutdown_bound(scenario: Scenario, target: Target) -> Scenario:
    """`zombie-broker`'s bound the Target's declared one and HEALTH_SLACK_S, and the cut
    longer than it (see CUT_BEYOND_BOUND_S)."""
    declared = target.metadata_loss_shutdown_s
    assert declared is not None, "planned as unsupported"
    bound_s = declared + HEALTH_SLACK_S
    checkers = dataclasses.replace(scenario.checkers,
                                   zombie_broker_bound_ms=round(bound_s * 1000))
    return _stretched(dataclasses.replace(scenario, checkers=checkers),
                      round(bound_s + target.session_timeout_s + CUT_BEYOND_BOUND_S, 1))


def _stretched(scenario: Scenario, least: float) -> Scenario:
    """The timeline's faults lasting at least `least` seconds, and the run until SETTLE_S
    after the last of them ends."""
    timeline = tuple(dataclasses.replace(step, duration_s=max(step.duration_s, least))
                     for step in scenario.nemesis.timeline)
    nemesis = dataclasses.replace(scenario.nemesis, timeline=timeline)
    ends = [step.at_s + step.duration_s for step in timeline]
    duration_s = max([scenario.duration_s, *(end + SETTLE_S for end in ends)])
    return dataclasses.replace(scenario, nemesis=nemesis, duration_s=duration_s)
