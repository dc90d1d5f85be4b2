"""Fault schedules: what the nemesis does when, fixed before the run starts.

A schedule is built from the scenario's `[nemesis]` settings, the Target's planned nodes
(a `Surface`) and the run seed alone: a `timeline` is taken as written, a `random` schedule
draws its gaps, durations, fault kinds and targets from a `random.Random` seeded from the
run seed, so two runs with one seed inject the same faults into the same nodes at the same
offsets. Every schedule ends with a heal of everything at the end of the workload phase,
before the final drain.

Targets are node names (`a-broker1`, `a-bookie1`, `a-zk1`), a role (`broker`, `bookie`,
`zookeeper`: one node of it in the first cluster, or in any with `aim_clusters = "any"`,
drawn from the seed), or a target the
system decides at run time (`owner`, `controller-leader`: see `nemesis.faults.base`).
Fault kinds, what they need and what they take come from the registry
(`nemesis.faults`).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from dataclasses import dataclass

from harness.target import ROLES
from nemesis.faults import FAULTS
from nemesis.faults.base import (
    CONTROLLER_LEADER,
    OWNER,
    RUNTIME_TARGETS,
    Fault,
    FaultPlanError,
    Surface,
)

SCHEDULES = ("none", "random", "timeline")
AIM_CLUSTERS = ("first", "any")
"""Where a random schedule's faults land when the run has several clusters: the first
cluster's nodes and the first cluster cut from the others (`first`), or any cluster's
(`any`)."""
AIMS = (*ROLES, CONTROLLER_LEADER)
"""What a random schedule's `roles` may list: node roles, and the scalable topic's
controller leader (a broker the run finds when the fault starts)."""


@dataclass(frozen=True)
class TimedFault:
    at_s: float
    fault: str
    duration_s: float = 0.0
    targets: tuple[str, ...] = ()


@dataclass(frozen=True)
class NemesisSettings:
    """The scenario's `[nemesis]` table."""

    schedule: str = "none"
    faults: tuple[str, ...] = ()
    interval_s: float = 10.0
    duration_s: float = 5.0
    timeline: tuple[TimedFault, ...] = ()
    overlap: float = 0.0
    """Random schedule: the share of faults after which the next one begins while it is
    still on (at a point of its length drawn uniformly), so two faults act at once. Never
    three: the fault begun inside another is followed by a quiet gap."""
    roles: tuple[str, ...] = ()
    """Random schedule: node roles a fault may be aimed at besides its own defaults, where
    every node of the role can take it (a bookie killed or frozen, say), and
    `controller-leader`: a fault aimed at the topic's owner may hit the scalable topic's
    controller leader instead, where there is one. Empty: each fault's defaults alone, as
    before these existed."""
    aim_clusters: str = "first"
    """Random schedule over several clusters: `first` aims a role at the first cluster's
    nodes and cuts the first cluster from all others; `any` draws, for each fault, the
    cluster whose node a role names, and for a fault between clusters (`cut-wan`,
    `unlink-replication`) one pair of clusters in half the draws: a remote region's broker
    lost while it receives replicated messages, or two regions apart while a third still
    hears both. `owner` and `controller-leader` stay the first cluster's."""
    lengths_s: tuple[float, ...] = ()
    """Random schedule: lengths its faults may be drawn about besides `duration_s`, one of
    them all picked for each fault, so a quick crash can come inside a long outage."""
    nodes_at_once: int = 1
    """Random schedule: how many nodes a fault that can strike several (`kill`, `pause`,
    `expire-session`) strikes at once, each drawn as a lone target is, among the same
    aims and in the same cluster, and none twice: a rack's power lost takes a bookie and
    a broker together. Fewer when the draws repeat a node."""
    background: str | None = None
    """Random schedule: a fault begun once, at `background_at_s`, lasting `background_s`,
    beneath the others, which come and go inside it as they would without it: replication
    unlinked while the topic's owner crashes, one broker down while the others are killed
    and frozen in turn. Its target is drawn as a lone fault's is. None: no background."""
    background_at_s: float = 0.0
    background_s: float = 0.0
    quiet_end_s: float = 0.0
    """Random schedule: the last seconds of the load, in which no fault is on. Its faults
    are drawn over the rest, and everything is healed when the quiet end begins: what a
    system owes once its faults are over (a probe that can at last be judged, a failover
    after replication came back, a subscription catching up) is then asked of it under
    load, as Jepsen's final phase does. 0: faults until the load ends."""

    def without_background(self) -> NemesisSettings:
        """These settings with no background, its time and length back to their defaults
        (a scenario written out keeps no length of a fault it does not have)."""
        return dataclasses.replace(self, background=None, background_at_s=0.0,
                                   background_s=0.0)

    def without_faults(self) -> NemesisSettings:
        """These settings with no fault at all: the schedule `none`."""
        return dataclasses.replace(self.without_background(), schedule="none", faults=(),
                                   timeline=(), quiet_end_s=0.0)


@dataclass(frozen=True)
class FaultStep:
    at_s: float
    """Seconds after the workload started."""
    fault: str
    duration_s: float
    """How long until its end (start, resume, heal); 0 for instantaneous faults."""
    targets: tuple[str, ...]
    """Node names, or runtime targets (resolved when the step runs)."""
    shape_seed: int
    """Seeds the random partition shapes (and the choice of a broker when no owner can be
    found), so they too follow from the run seed."""
    beneath: bool = False
    """The schedule's background: no fault begun inside it strikes a node it holds, even
    one known only at run time, or puts back a link it holds (`NemesisRunner`)."""

    @property
    def kind(self) -> Fault:
        return FAULTS[self.fault]

    @property
    def ends(self) -> bool:
        return not self.kind.instant

    def would_relink(self, beneath: FaultStep) -> bool:
        """Whether this fault between clusters, begun while the background `beneath` is
        on, would end it: the same fault between the same clusters, no targets meaning the
        first cluster against all others, which may be either pair."""
        return (self.kind.cluster_targets and self.fault == beneath.fault
                and (self.targets == beneath.targets
                     or not (self.targets and beneath.targets)))


@dataclass(frozen=True)
class Action:
    at_s: float
    kind: str
    """`begin` or `end` of `step`, or `heal`: the final heal of everything."""
    step: FaultStep | None = None


@dataclass(frozen=True)
class Schedule:
    steps: tuple[FaultStep, ...]
    heal_at_s: float
    """The end of the workload phase: everything is healed then, whatever is still on."""

    def pinned(self, hit: Sequence[tuple[str, tuple[str, ...]]]) -> Schedule:
        """This schedule with each fault aimed at the nodes it hit in an earlier run of the
        same seed: `hit` is that run's faults as recorded, in order, each `(op, targets)`.
        Only the targets resolved at run time (`owner`, `controller-leader`) can differ
        between runs; a step the earlier run never reached keeps its own targets."""
        remaining = list(hit)
        steps = []
        for step in self.steps:
            targets = step.targets
            if step.at_s < self.heal_at_s and remaining and remaining[0][0] == step.kind.op:
                targets = remaining.pop(0)[1]
            steps.append(dataclasses.replace(step, targets=targets))
        return Schedule(tuple(steps), self.heal_at_s)

    def actions(self) -> list[Action]:
        """Every begin and end in time order, the final heal last. An end that would come
        at or after the heal is left to the heal."""
        actions = []
        for step in self.steps:
            if step.at_s >= self.heal_at_s:
                continue
            actions.append(Action(step.at_s, "begin", step))
            end = step.at_s + step.duration_s
            if step.ends and end < self.heal_at_s:
                actions.append(Action(end, "end", step))
        actions.sort(key=lambda a: (a.at_s, a.kind == "begin"))  # ends before begins
        return [*actions, Action(self.heal_at_s, "heal")]


def build_schedule(settings: NemesisSettings, surface: Surface, seed: int, duration_s: float,
                   source: str) -> Schedule:
    """The run's schedule; raises FaultPlanError naming `source` and the key when the
    Target cannot take a fault or a target names no node. A random schedule with a quiet
    end heals everything where it begins, `quiet_end_s` before the load ends."""
    rng = random.Random(f"{seed}:nemesis")
    heal_at_s = duration_s
    if settings.schedule == "timeline":
        steps = []
        for n, item in enumerate(settings.timeline):
            key = f"{source}: nemesis.timeline[{n}]"
            fault = _fault(surface, f"{key}.fault", item.fault)
            steps.append(FaultStep(item.at_s, item.fault, item.duration_s,
                                   _targets(surface, f"{key}.targets", fault, item.targets, rng),
                                   rng.getrandbits(32)))
        steps.sort(key=lambda s: s.at_s)
    elif settings.schedule == "random":
        for n, name in enumerate(settings.faults):
            _fault(surface, f"{source}: nemesis.faults[{n}]", name)
        background = _background(settings, surface, seed, source)
        heal_at_s = max(0.0, duration_s - settings.quiet_end_s)
        steps = _random_steps(settings, surface, seed, heal_at_s, source, rng)
        if background is not None:
            steps = sorted([background, *steps], key=lambda s: s.at_s)
    else:
        steps = []
    return Schedule(tuple(steps), heal_at_s)


OTHER_AIM_TRIES = 8
"""How often a fault begun inside another of its kind draws its target again while it
names the other's: a second freeze of a frozen broker adds nothing, and its end would cut
the first short. Where every draw names the same node (one broker), it keeps that. A fault
of another kind may hit the same node: a frozen broker killed, as a supervisor kills a hung
process."""


def _background(settings: NemesisSettings, surface: Surface, seed: int, source: str
                ) -> FaultStep | None:
    """The schedule's background fault, its target drawn from a generator of its own (so
    that the faults inside it are drawn as they would be without it); None without one."""
    if not settings.background:
        return None
    key = f"{source}: nemesis.background"
    fault = _fault(surface, key, settings.background)
    if not fault.can_lie_beneath:
        raise FaultPlanError(
            f"{key}: {fault.name} cannot stay on beneath other faults "
            f"({'it is over once done' if fault.instant else 'the next network cut replaces it'}); "
            f"expected a fault with an end of its own, such as kill, pause or "
            f"unlink-replication")
    rng = random.Random(f"{seed}:nemesis:background")
    alone = dataclasses.replace(settings, nodes_at_once=1)
    targets = _random_targets(alone, surface, key, fault, rng,
                              _aims(surface, fault, settings.roles))
    return FaultStep(settings.background_at_s, fault.name, settings.background_s, targets,
                     rng.getrandbits(32), beneath=True)


def _random_steps(settings: NemesisSettings, surface: Surface, seed: int, until_s: float,
                  source: str, rng: random.Random) -> list[FaultStep]:
    """Faults one after another, each begun before `until_s`: a quiet gap of about
    `interval_s`, then a fault lasting about `duration_s` or one of `lengths_s` (each drawn
    between half and one and a half times the setting).
    With `overlap`, some faults begin inside the one before instead of after a gap; the
    gap after such a pair counts from the later of their two ends. A background is drawn
    apart (`_background`) and moves none of these; the runner keeps them off what it holds
    (`NemesisRunner`), which only it can see for a target found at run time."""
    steps: list[FaultStep] = []
    t = 0.0
    quiet_from = 0.0  # when every fault begun so far has ended
    inside = False  # the next fault begins inside the one just begun
    while len(steps) < 10_000:
        if not inside:
            t = quiet_from + rng.uniform(0.5, 1.5) * settings.interval_s
        if t >= until_s:
            break
        name = rng.choice(settings.faults)
        fault = FAULTS[name]
        duration = 0.0 if fault.instant else rng.uniform(0.5, 1.5) * _length(settings, rng)
        aims = _aims(surface, fault, settings.roles)
        targets = _random_targets(settings, surface, f"{source}: nemesis.faults", fault, rng,
                                  aims)
        follows_kin = inside and bool(steps) and name == steps[-1].fault
        for _ in range(OTHER_AIM_TRIES if follows_kin else 0):
            if not targets or targets != steps[-1].targets:
                break
            targets = _random_targets(settings, surface, f"{source}: nemesis.faults", fault,
                                      rng, aims)
        steps.append(FaultStep(round(t, 3), name, round(duration, 3), targets,
                               rng.getrandbits(32)))
        quiet_from = max(quiet_from, t + duration)
        if settings.interval_s == 0 and duration == 0:
            quiet_from += 1.0  # back-to-back instantaneous faults still need time between
        inside = (not inside and duration > 0 and settings.overlap > 0
                  and rng.random() < settings.overlap)
        if inside:
            t += rng.uniform(0.0, duration)
    return steps


def _length(settings: NemesisSettings, rng: random.Random) -> float:
    """The length a fault is drawn about: `duration_s` or one of `lengths_s` (drawing
    nothing without `lengths_s`, so such a schedule is what it was before they existed)."""
    if not settings.lengths_s:
        return settings.duration_s
    return rng.choice((settings.duration_s, *settings.lengths_s))


def longest_length_s(settings: NemesisSettings) -> float:
    """The longest length a random schedule's faults are drawn about (its background
    aside)."""
    return max((settings.duration_s, *settings.lengths_s))


PAIR_SHARE = 0.5
"""With `aim_clusters = "any"`, the share of a fault between clusters that acts between a
drawn pair of them; the rest cut the first cluster from all others, as `first` does."""


def _random_targets(settings: NemesisSettings, surface: Surface, key: str, fault: Fault,
                    rng: random.Random, aims: Sequence[str]) -> tuple[str, ...]:
    """A random step's targets: one of `aims` (`nodes_at_once` of them, where the fault
    strikes several), in the first cluster or, with `aim_clusters = "any"`, in a cluster
    drawn from `rng`."""
    cluster = None
    if settings.aim_clusters == "any" and len(surface.clusters) > 1:
        if fault.cluster_targets:
            pair = tuple(rng.sample(surface.clusters, 2)) if rng.random() < PAIR_SHARE else ()
            return _targets(surface, key, fault, pair, rng)
        cluster = rng.choice(surface.clusters)
    targets = _targets(surface, key, fault, (), rng, aims, cluster=cluster)
    for _ in range(settings.nodes_at_once - 1 if fault.strikes_several else 0):
        more = _targets(surface, key, fault, (), rng, aims, cluster=cluster)
        targets += tuple(t for t in more if t not in targets)
    return targets


def _aims(surface: Surface, fault: Fault, roles: Sequence[str]) -> tuple[str, ...]:
    """What a random step of `fault` picks its target among: its defaults, then each of
    `roles` whose every node can take it (a target file may control a role's nodes
    partly, or list none of it), then the controller leader when `roles` names it, the
    run has a controller and the fault is aimed at the owner (a broker, as the leader
    is)."""
    extra: list[str] = []
    for role in ROLES:
        names = surface.of_role(role)
        if role not in roles or role in fault.defaults or not fault.takes_targets or not names:
            continue
        if not all(surface.can(name, need) for name in names for need in fault.needs):
            continue
        try:
            for name in names:
                fault.check_targets(surface, role, (name,))
        except FaultPlanError:
            continue
        extra.append(role)
    if (CONTROLLER_LEADER in roles and surface.controller and OWNER in fault.defaults
            and CONTROLLER_LEADER not in fault.defaults):
        extra.append(CONTROLLER_LEADER)
    return (*fault.defaults, *extra)


def _fault(surface: Surface, key: str, name: str) -> Fault:
    """The registry's fault `name`, when the Target offers what it needs."""
    fault = FAULTS.get(name)
    if fault is None:
        raise FaultPlanError(f"{key}: expected one of {', '.join(FAULTS)}, got {name!r}")
    missing = sorted(c for c in fault.needs if not surface.anyone_can(c))
    if missing:
        raise FaultPlanError(f"{key}: the target cannot take {name}: it needs "
                             f"{', '.join(missing)}, which no node offers")
    fault.check(surface, key)
    return fault


def _targets(surface: Surface, key: str, fault: Fault, given: Sequence[str],
             rng: random.Random, aims: Sequence[str] = (), cluster: str | None = None
             ) -> tuple[str, ...]:
    """Resolve role words to node names of `cluster` (the first by default) with `rng`;
    draw one of `aims` (else of the fault's defaults) when none is given."""
    if fault.cluster_targets:
        for n, target in enumerate(given):
            if target not in surface.clusters:
                raise FaultPlanError(f"{key}[{n}]: expected a cluster name (one of "
                                     f"{', '.join(surface.clusters)}), got {target!r}")
        fault.check_targets(surface, key, given)
        return tuple(given)
    if not fault.takes_targets:
        if given:
            raise FaultPlanError(f"{key}: {fault.name} takes no targets (its shape spans "
                                 f"the cluster), got {list(given)}")
        return ()
    if not given:
        given = (rng.choice(aims or fault.defaults),)
    everyone = [n.name for n in surface.nodes]
    resolved = []
    for n, target in enumerate(given):
        if target in ROLES:
            of_role = surface.of_role(target, cluster)
            if not of_role:  # a target file that lists no node of the role
                raise FaultPlanError(f"{key}[{n}]: the target names no {target} node"
                                     + (f" in cluster {cluster}" if cluster else ""))
            resolved.append(rng.choice(of_role))
        elif target in RUNTIME_TARGETS or target in everyone:
            resolved.append(target)
        else:
            raise FaultPlanError(f"{key}[{n}]: expected a node name (one of "
                                 f"{', '.join(everyone)}), a role (broker, bookie, zookeeper), "
                                 f"owner or controller-leader, got {target!r}")
    for name in resolved:
        missing = [c for c in fault.needs if name in everyone and not surface.can(name, c)]
        if missing:
            raise FaultPlanError(f"{key}: {name} cannot take {fault.name}: it needs "
                                 f"{', '.join(missing)}")
    fault.check_targets(surface, key, resolved)
    return tuple(resolved)
