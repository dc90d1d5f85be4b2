"""Fault schedules: what the nemesis does when, fixed before the run starts.

A schedule is built from the scenario's `[nemesis]` table and the run seed alone: a
`timeline` is taken as written, a `random` schedule draws its gaps, durations, fault kinds
and targets from a `random.Random` seeded from the run seed, so two runs with one seed
inject the same faults into the same nodes at the same offsets. Every schedule ends with
a heal of everything at the end of the workload phase, before the final drain.

Targets are node names as both backends spell them (`a-broker1`, `a-bookie1`, `a-zk1`),
a role (`broker`, `bookie`, `zookeeper`: one node of it, drawn from the seed), `owner`:
the broker that owns the workload's topic when the fault starts, or `controller-leader`:
the broker leading the scalable topic's controller then (the target of
`kill-controller-leader` and `isolate-controller-leader`). `owner` and `controller-leader`
are the only targets the schedule cannot fix: they are the system's choice at run time.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from scenarios.format import Scenario, ScenarioError

OWNER = "owner"
CONTROLLER_LEADER = "controller-leader"
RUNTIME_TARGETS = (OWNER, CONTROLLER_LEADER)
"""Targets resolved when the fault starts, by asking the brokers."""
ROLES = {"broker": "broker", "bookie": "bookie", "zookeeper": "zk"}
"""Target word -> the node-name infix of that role."""

PROCESS_FAULTS = ("kill", "pause", "kill-controller-leader")
"""Faults with an end (start, resume) on the same targets."""
PARTITIONS = ("isolate", "random-halves", "bridge", "majorities-ring", "brokers-from-zookeeper",
              "isolate-controller-leader")
CONTROLLER_FAULTS = ("kill-controller-leader", "isolate-controller-leader")
"""Faults aimed at a scalable topic's controller leader (PIP-468 leader failover)."""
INSTANT_FAULTS = ("expire-session",)

WAN_FAULTS = ("cut-wan",)
"""Cuts between clusters: every node of the first cluster from every node of the others."""

BACKEND_FAULTS = {
    "docker": frozenset((*PROCESS_FAULTS, *PARTITIONS, *INSTANT_FAULTS, *WAN_FAULTS)),
    "local": frozenset((*PROCESS_FAULTS, *INSTANT_FAULTS)),
}
"""What each backend can inject. Local processes share the loopback interface, so they
cannot be partitioned from each other (nor their clusters cut apart); the controller
faults wait for the scalable workload."""

DEFAULT_TARGETS: dict[str, tuple[str, ...]] = {
    "kill": (OWNER, "broker"),
    "pause": (OWNER, "broker"),
    "expire-session": (OWNER, "broker"),
    "isolate": (OWNER, "broker", "bookie", "zookeeper"),
    "kill-controller-leader": (CONTROLLER_LEADER,),
    "isolate-controller-leader": (CONTROLLER_LEADER,),
}
"""What a fault picks among when the scenario names no target (one pick per fault);
faults missing here act on shapes of the whole cluster and take no targets."""


@dataclass(frozen=True)
class FaultStep:
    at_s: float
    """Seconds after the workload started."""
    fault: str
    duration_s: float
    """How long until its end (start, resume, heal); 0 for instantaneous faults."""
    targets: tuple[str, ...]
    """Node names, or `owner` (resolved when the step runs)."""
    shape_seed: int
    """Seeds the random partition shapes (and the choice of a broker when no owner can be
    found), so they too follow from the run seed."""

    @property
    def ends(self) -> bool:
        return self.fault not in INSTANT_FAULTS


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


def node_names(scenario: Scenario, cluster: str | None = None) -> dict[str, list[str]]:
    """Role word -> the names of the nodes of that role in `cluster` (by default the
    first; fault targets name nodes of the first cluster), as both backends name them."""
    t = scenario.topology
    cluster = cluster or t.clusters[0]
    counts = {"broker": t.brokers, "bookie": t.bookies, "zookeeper": t.zookeepers}
    return {role: [f"{cluster}-{ROLES[role]}{n}" for n in range(1, counts[role] + 1)]
            for role in ROLES}


def build_schedule(scenario: Scenario, seed: int, backend: str | None = None) -> Schedule:
    """The run's schedule; raises ScenarioError naming the key when the backend cannot
    inject a fault or a target names no node."""
    nemesis = scenario.nemesis
    backend = backend or scenario.topology.backend
    _check_backend(scenario, backend)
    rng = random.Random(f"{seed}:nemesis")
    names = node_names(scenario)
    if nemesis.schedule == "timeline":
        steps = [FaultStep(item.at_s, item.fault, item.duration_s,
                           _targets(scenario, f"nemesis.timeline[{n}].targets", item.fault,
                                    item.targets, names, rng),
                           rng.getrandbits(32))
                 for n, item in enumerate(nemesis.timeline)]
        steps.sort(key=lambda s: s.at_s)
    elif nemesis.schedule == "random":
        steps = _random_steps(scenario, names, rng)
    else:
        steps = []
    return Schedule(tuple(steps), scenario.duration_s)


def _random_steps(scenario: Scenario, names: dict[str, list[str]], rng: random.Random
                  ) -> list[FaultStep]:
    """Faults one after another: a quiet gap of about `interval_s`, then a fault lasting
    about `duration_s` (each drawn between half and one and a half times the setting)."""
    nemesis = scenario.nemesis
    steps: list[FaultStep] = []
    t = 0.0
    while len(steps) < 10_000:
        t += rng.uniform(0.5, 1.5) * nemesis.interval_s
        if t >= scenario.duration_s:
            break
        fault = rng.choice(nemesis.faults)
        duration = 0.0 if fault in INSTANT_FAULTS else rng.uniform(0.5, 1.5) * nemesis.duration_s
        targets = _targets(scenario, "nemesis.faults", fault, (), names, rng)
        steps.append(FaultStep(round(t, 3), fault, round(duration, 3), targets,
                               rng.getrandbits(32)))
        t += duration
        if nemesis.interval_s == 0 and duration == 0:
            t += 1.0  # back-to-back instantaneous faults still need time between them
    return steps


def _check_backend(scenario: Scenario, backend: str) -> None:
    nemesis = scenario.nemesis
    can = BACKEND_FAULTS[backend]
    wanted = [(f"nemesis.faults[{n}]", f) for n, f in enumerate(nemesis.faults)]
    if nemesis.schedule == "timeline":
        wanted = [(f"nemesis.timeline[{n}].fault", item.fault)
                  for n, item in enumerate(nemesis.timeline)]
    for key, fault in wanted:
        if fault not in can:
            raise ScenarioError(f"{scenario.path}: {key}: the {backend} backend cannot "
                                f"inject {fault}; it can inject {', '.join(sorted(can))}")
        if fault in CONTROLLER_FAULTS and scenario.workload.kind != "scalable":
            raise ScenarioError(f"{scenario.path}: {key}: {fault} needs a scalable topic's "
                                f"controller; workload.kind is {scenario.workload.kind!r}")
        if fault in WAN_FAULTS and len(scenario.topology.clusters) < 2:
            raise ScenarioError(f"{scenario.path}: {key}: {fault} cuts clusters apart; "
                                f"topology.clusters names only "
                                f"{list(scenario.topology.clusters)}")


def _targets(scenario: Scenario, key: str, fault: str, given: Sequence[str],
             names: dict[str, list[str]], rng: random.Random) -> tuple[str, ...]:
    """Resolve role words to node names with `rng`; draw a default when none is given."""
    if fault not in DEFAULT_TARGETS:
        if given:
            raise ScenarioError(f"{scenario.path}: {key}: {fault} takes no targets (its "
                                f"shape spans the cluster), got {list(given)}")
        return ()
    if not given:
        given = (rng.choice(DEFAULT_TARGETS[fault]),)
    everyone = [n for role in names.values() for n in role]
    resolved = []
    for n, target in enumerate(given):
        if target in ROLES:
            resolved.append(rng.choice(names[target]))
        elif target in RUNTIME_TARGETS or target in everyone:
            resolved.append(target)
        else:
            raise ScenarioError(f"{scenario.path}: {key}[{n}]: expected a node name (one of "
                                f"{', '.join(everyone)}), a role (broker, bookie, zookeeper), "
                                f"owner or controller-leader, got {target!r}")
    if fault in CONTROLLER_FAULTS and resolved != [CONTROLLER_LEADER]:
        raise ScenarioError(f"{scenario.path}: {key}: {fault} acts on the controller "
                            f"leader only, got {list(given)}")
    if fault == "isolate" and len(resolved) != 1:
        raise ScenarioError(f"{scenario.path}: {key}: isolate cuts one node off, got "
                            f"{list(given)}")
    if fault == "expire-session":
        brokers = set(names["broker"]) | {OWNER}
        if any(t not in brokers for t in resolved):
            raise ScenarioError(f"{scenario.path}: {key}: expire-session acts on brokers "
                                f"(their ZooKeeper session), got {list(given)}")
    return tuple(resolved)
