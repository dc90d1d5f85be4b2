"""Whole scenarios drawn from a seed, for `starquake explore` (docs/explore.md).

A seed draws everything a scenario file holds: the workload and every knob it declares,
the topology within what the backend can start, a random fault schedule over the faults
the planned nodes can take, the run's length, and the liveness bound its faults justify.
The distributions are broad and written down here, one per knob, so a knob added without
one is refused by the tests; nothing in them knows of any mutant. The drawn scenario is an
ordinary scenario file: `starquake run` and `starquake reproduce` repeat it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from harness.backends import backend as backend_named
from harness.target import ROLES, Node
from harness.topology import Topology, metadata_loss_shutdown_s
from harness.workloads.knobs import KnobSpec, declared
from harness.workloads.registry import WORKLOADS
from harness.workloads.settings import SINGLE_ACTIVE_MODES, WorkloadSettings
from harness.workloads.shared_knobs import ConsumerWorkKnobs, OfficialClientKnobs
from nemesis.faults import FAULTS
from nemesis.faults.base import ClusterPair, Fault, FaultPlanError, Surface
from nemesis.schedule import NemesisSettings, build_schedule, longest_length_s
from scenarios.format import Checkers, Scenario
from scenarios.plan import surface

KINDS = ("topic", "scalable", "geo", "migration", "contract")
"""The workloads explore draws from (the `auth` workload probes a token topology's
refusals: `starquake conform` runs it where a target has tokens)."""


ALL_AT_ONCE_SHARE = 0.25
"""The share of draws in which every client behaviour that is off in some draws is on:
consumers that crash, work on each message, negatively and cumulatively acknowledge,
a late subscription, deduplication. Bugs live where such behaviours meet (a cumulative
ack from a consumer behind its receiver queue that then crashes), and drawn one by one,
each on in about half the draws, four of them meet in one draw of sixteen at best."""


@dataclass(frozen=True)
class Draw:
    """What a knob's distribution may look at: the seed's generator, the run's length, and
    whether this draw switches every optional client behaviour on (ALL_AT_ONCE_SHARE)."""

    rng: random.Random
    duration_s: float
    all_at_once: bool

    def log_uniform(self, low: float, high: float) -> float:
        return math.exp(self.rng.uniform(math.log(low), math.log(high)))

    def sometimes(self, share: float, value: Callable[[], Any], otherwise: Any) -> Any:
        """`value()` in `share` of the draws (in all of them `all_at_once`), else
        `otherwise` (the knob's off value)."""
        return value() if self.rng.random() < share or self.all_at_once else otherwise


KnobDraw = Callable[[Draw, KnobSpec], Any]

CONSUMER_LOAD = (0.3, 3.0)
"""Where consumers work on each message, how busy that keeps them, log-uniform: the work
per second of messages each reader gets, at the drawn rate (one reader in `exclusive` and
`failover`). Below 1 they keep up, with messages queued at times; above 1 a backlog grows
in their receiver queues, which is what a crash, a failover or a cumulative ack should
find. Drawn as a load rather than as milliseconds, because the rate is drawn apart: a fixed
range of milliseconds left the consumers idle in most draws."""


def _choice(draw: Draw, spec: KnobSpec) -> Any:
    return draw.rng.choice(spec.rule.choices)


SUBSET_SHARE = 0.75
"""The chance of each choice of a subset knob (the contract's probe groups): three in four
on average. A group not drawn checks nothing, and at one in two a group went undrawn in
three seeds running one time in eight; every group at once would leave little of a short
run for the groups a fault struck to run again."""


def _subset(draw: Draw, spec: KnobSpec) -> tuple[str, ...]:
    """Each choice with chance SUBSET_SHARE, at least one, in their declared order; every
    choice in a draw `all_at_once` (every probe group, as every optional behaviour)."""
    chosen = {c for c in spec.rule.choices if draw.rng.random() < SUBSET_SHARE}
    if draw.all_at_once:  # drawn above all the same: the knobs after it keep their draws
        return spec.rule.choices
    chosen = chosen or {draw.rng.choice(spec.rule.choices)}
    return tuple(c for c in spec.rule.choices if c in chosen)


def _coin(share: float) -> KnobDraw:
    """On in `share` of the draws, and in every draw `all_at_once`."""
    return lambda draw, _spec: draw.sometimes(share, lambda: True, False)


def _ints(low: int, high: int) -> KnobDraw:
    return lambda draw, _spec: draw.rng.randint(low, high)


def _log_ints(low: int, high: int) -> KnobDraw:
    return lambda draw, _spec: round(draw.log_uniform(low, high))


def _seconds(low: float, high: float) -> KnobDraw:
    return lambda draw, _spec: round(draw.rng.uniform(low, high), 1)


def _off_or(share: float, low: float, high: float) -> KnobDraw:
    """A log-uniform value in `share` of the draws, else the knob's 0 (off)."""
    return lambda draw, _spec: draw.sometimes(
        share, lambda: round(draw.log_uniform(low, high), 2), 0.0)


def _default(_draw: Draw, spec: KnobSpec) -> Any:
    return spec.default


KNOB_DRAWS: dict[str, KnobDraw] = {
    # every workload's
    "rate": _log_ints(20, 300),
    "keys": _log_ints(1, 1000),
    "producers": _ints(1, 4),
    "consumers": _ints(1, 4),
    "drain_quiet_s": _default,  # how the harness waits, not what the system does
    "drain_timeout_s": _default,
    # consumers at work, clients' timeouts
    "process_ms": _off_or(0.5, *CONSUMER_LOAD),  # a load, made ms per message by _loaded
    "send_timeout_s": lambda draw, _spec: draw.rng.choice((3.0, 10.0, 30.0)),
    "subscription_mode": _choice,
    "processes": _ints(1, 4),
    "crash_interval_s": _off_or(0.6, 3, 15),
    "receiver_queue": lambda draw, _spec: draw.rng.choice((1, 10, 100, 1000)),
    "nack_share": _off_or(0.6, 0.01, 0.3),
    "cumulative_ack_every": _off_or(0.6, 1, 20),
    "deduplication": _coin(0.5),
    "consumer_lag_s": _seconds(0, 3),
    # scalable topics
    "initial_segments": _ints(1, 4),
    "layout_interval_s": lambda draw, _spec: round(draw.log_uniform(0.5, 8), 1),
    "layout_until_s": lambda draw, _spec: (  # when changes stop: no behaviour switched on
        round(draw.rng.uniform(0.3, 0.8) * draw.duration_s, 1) if draw.rng.random() < 0.3
        else 0.0),
    "edge_key_share": lambda draw, _spec: round(draw.rng.uniform(0, 0.6), 2),
    "layout_lag_ms": _off_or(0.5, 50, 1500),
    "late_subscription": _coin(0.5),
    "merge_union_probe": _coin(0.5),
    # geo-replication
    "failover_every_s": _seconds(3, 12),
    # contract probes
    "groups": _subset,
}
"""One distribution per knob a workload declares (docs/explore.md lists them)."""


def knob_value(spec: KnobSpec, draw: Draw) -> Any:
    value = KNOB_DRAWS[spec.name](draw, spec)
    if spec.kind is int:
        least = 1 if spec.rule.least is None else int(spec.rule.least)
        return max(int(value), least)
    return value


def draw_workload(kind: str, draw: Draw) -> WorkloadSettings:
    common = {spec.name: knob_value(spec, draw) for spec in declared(WorkloadSettings)}
    specs = declared(WORKLOADS[kind].knobs)
    values = {spec.name: knob_value(spec, draw) for spec in specs}
    knobs = WORKLOADS[kind].knobs(**values)
    for _ in specs:  # values that make no sense together: the one named goes back to default
        problem = knobs.problem(common)
        if problem is None:
            break
        values[problem[0]] = next(spec.default for spec in specs if spec.name == problem[0])
        knobs = WORKLOADS[kind].knobs(**values)
    return _drainable(_loaded(WorkloadSettings(kind=kind, knobs=knobs, **common)),
                      draw.duration_s)


def _readers(settings: WorkloadSettings, knobs: ConsumerWorkKnobs) -> int:
    """How many consumers read at once: one in the single-active modes."""
    single = (isinstance(knobs, OfficialClientKnobs)
              and knobs.subscription_mode in SINGLE_ACTIVE_MODES)
    return 1 if single else settings.consumers


def _loaded(settings: WorkloadSettings) -> WorkloadSettings:
    """`settings` with `process_ms`, drawn as a load (CONSUMER_LOAD), made the work per
    message that gives each reader that load at the drawn rate."""
    knobs = settings.knobs
    if not isinstance(knobs, ConsumerWorkKnobs) or not knobs.process_ms:
        return settings
    work_ms = knobs.process_ms * 1000 * _readers(settings, knobs) / settings.rate
    return replace(settings, knobs=replace(knobs, process_ms=round(work_ms, 2)))


DRAIN_WITHIN_S = 90.0
"""How long after the load the consumers of a drawn run may need to read what was sent.
Consumers that work on each message (`process_ms`) lag, which the draw wants; but a lag
no drain can make up leaves the verdict `unknown` (`lost` undecided), which judges
nothing: so the work per message is capped where the consumers would need longer."""
DRAIN_MARGIN_S = 60.0
"""What the drain's timeout allows past DRAIN_WITHIN_S: faults that stalled the consumers,
a last redelivery."""


def _drainable(settings: WorkloadSettings, duration_s: float) -> WorkloadSettings:
    """`settings` with the consumers' work per message capped so that the consumers read,
    within DRAIN_WITHIN_S of the load's end, what was sent at `rate` over `duration_s`
    (one consumer at a time in the single-active modes), and the drain's timeout long
    enough for the lag that remains."""
    knobs = settings.knobs
    if not isinstance(knobs, ConsumerWorkKnobs) or not knobs.process_ms:
        return settings
    readers = _readers(settings, knobs)
    sent = settings.rate * duration_s
    work_ms = min(knobs.process_ms, round(readers * 1000 * (duration_s + DRAIN_WITHIN_S)
                                          / sent, 2))
    after_load_s = sent * work_ms / 1000 / readers - duration_s
    return replace(settings, knobs=replace(knobs, process_ms=work_ms),
                   drain_timeout_s=max(settings.drain_timeout_s,
                                       round(after_load_s + DRAIN_MARGIN_S, 1)))


CLUSTER_NAMES = ("a", "b", "c")
"""A several-cluster workload gets two of these, or three in half the draws when it uses
every cluster it is given: past two, PIP-33 needs a second snapshot round, and a WAN cut
between two clusters can leave the third hearing both, where its snapshots go wrong."""


def draw_topology(kind: str, backend: str, rng: random.Random) -> Topology:
    """Where a seed's run is deployed. The controller's hold between a change's steps is
    set for `scalable` alone, the only workload with a controller, and the replicators'
    keep-alive and the snapshot timeout for `geo` alone, the workload with replicated
    subscriptions: the other workloads' scenario files keep their defaults, and so do
    brokers other than ours, which do not read them."""
    workload = WORKLOADS[kind]
    count = 1
    if workload.clusters == "several":
        count = 2 if workload.uses_clusters == 2 else rng.choice((2, 3))
    by_kind: dict[str, dict[str, Any]] = {
        "scalable": {"controller_step_pause_s": round(rng.choice((0.0, rng.uniform(0.5, 4))), 1)},
        "geo": {"replication_keepalive_s": rng.choice((2.0, 5.0, 30.0)),
                "snapshot_timeout_s": rng.choice((3.0, 10.0, 30.0))}}
    topology = Topology(clusters=CLUSTER_NAMES[:count], zookeepers=rng.choice((1, 1, 1, 3)),
                        bookies=rng.randint(1, 3), brokers=rng.randint(1, 3), backend=backend,
                        session_expired_policy=rng.choice(("reconnect", "shutdown")),
                        session_timeout_ms=rng.choice((4000, 6000, 10000)))
    if not backend_named(backend).reference_brokers:
        return topology
    return replace(topology, **by_kind.get(kind, {}))


SHORT_FAULT_S = (1.0, 3.0)
"""Faults shorter than any session timeout drawn (seconds)."""
PAST_BAND = (1.2, 2.5)
"""How far past a time the faults of the two other bands last, as multiples of it."""


def fault_lengths(topology: Topology, duration_s: float) -> tuple[tuple[float, float], ...]:
    """The bands a drawn scenario's fault length is drawn from, one band per scenario:
    short faults; faults past the session timeout (and so past the clients' keep-alive),
    in which sessions end and ownership moves; and faults past the time a broker cut from
    its metadata store may stay up (`shutdown_bound_ms`), after which it must have shut
    down. The last two follow the drawn session timeout and policy (a fixed band in seconds
    was past a 4 s session always and past a 10 s one never), and stop at the run's length
    `duration_s`: the final heal ends a longer fault, and its length would only loosen the
    liveness bound."""
    def past(time_s: float) -> tuple[float, float]:
        low, high = (round(min(share * time_s, duration_s), 1) for share in PAST_BAND)
        return low, high
    return (SHORT_FAULT_S, past(topology.session_timeout_ms / 1000),
            past(shutdown_bound_ms(topology) / 1000))


QUIET_S = (2.0, 30.0)
"""The quiet gap between faults, log-uniform: from faults nearly back to back to gaps
longer than most faults, in which a probe or a failover can finish undisturbed. Never
above a third of the run (QUIET_RUN_SHARE): a gap drawn longer than the run left a run
with faults one fault at most, in a fifth of such runs."""
QUIET_RUN_SHARE = 1 / 3
OVERLAPS = (0.0, 0.5, 1.0)
"""The share of faults the next one begins inside, one of these per schedule: two faults
at once (a bookie and the topic's owner down together, a frozen broker killed, a crash
inside a partition); at 1, every other fault acts inside the one before, as a partition
and a crash composed."""
BETWEEN_SHARE = 0.5
"""Where the run has several clusters, the share of drawn schedules sure to hold a fault
between clusters (`cut-wan`, `unlink-replication`) beside the others: replication
between clusters is what such a workload exercises, and drawn uniformly among a dozen
kinds on containers such a fault was in one schedule of five. Drawn from a stream of its
own (`_between`), so that the other schedules are what they were before."""
ANY_CLUSTER_SHARE = 0.5
"""Where the run has several clusters, the share of drawn schedules whose faults land in
any of them (`aim_clusters = "any"`), not only in the first: a remote cluster's broker
lost while replicated messages reach it, two regions cut apart while a third hears both."""
NODES_AT_ONCE = (1, 1, 1, 2, 2, 3)
"""How many nodes a kill, freeze or session expiry strikes at once, one of these per
drawn schedule: one in half, two in a third, three in a sixth. Correlated failures (a
bookie and the broker writing to it lost together, every broker restarted) are where
what was acknowledged but not yet durable shows. Drawn from a stream of its own
(`_nodes_at_once`), so that a schedule striking one node is what it was before."""
MIXED_LENGTHS_SHARE = 0.5
"""The share of drawn schedules whose faults each take their length from any of the three
bands (`lengths_s`, one length per band) rather than all from the schedule's one band: a
quick restart of one broker inside another's long outage, a short freeze after a long cut.
Drawn from a stream of its own (`_lengths`), so that a schedule of one band is what it was
before."""
BACKGROUND_SHARE = 1 / 3
"""The share of drawn schedules with a long fault beneath the others (`background`): one of
the schedule's kinds that can stay on while others come and go (a kill, a freeze, an
unlink; not a network cut, which the next cut replaces), so that several faults act
inside one outage: the topic's owner crashing twice while replication is unlinked, one
broker frozen while the others are killed in turn. With `overlap` one fault at most
begins inside another. Drawn from a stream of its own, so that the other schedules are
what they were before."""
BACKGROUND_AT = (0.05, 0.25)
BACKGROUND_LENGTH = (0.3, 0.6)
"""When the background begins and how long it lasts, as shares of the run: it ends before
the load does, so that what it held up (a snapshot, a takeover) has the rest of the run to
go wrong in."""
STORAGE_ROLES = ("bookie",)
"""In half the drawn schedules, the roles a fault may hit besides its own: a bookie killed
or frozen under the brokers writing to it. Not ZooKeeper: a long fault there ends every
broker's session, which the liveness bound of one fault does not cover."""
LEADER_AIMS = ("controller-leader",)
"""Where the workload has a controller (scalable topics), in half the drawn schedules a
fault aimed at the topic's owner may hit the controller's leader instead: the broker
whose crash, freeze or lost session interrupts a split or merge between its steps."""
QUIET_SHARE = 0.2
"""The share of drawn scenarios with no fault at all: what a system promises when left
alone. A contract probe that a fault struck, or that ran within its aftermath, cannot tell
a broken promise from the fault's doing and says nothing (`info`); with faults one to four
at random from the first seconds, a probe group had few chances to run clear of them."""
HEALTH_SLACK_S = 5.0
"""Added to the time a broker cut from its metadata store may stay up (the deployment's
promise) to make `zombie-broker`'s bound: health is read once a second, and a reading may
come late."""
HEAL_MARGIN_S = 20.0
"""What the liveness bound allows past the longest fault and the session timeout: the
clients' back-off and reconnection, a new owner's recovery, a replicator's reconnect."""
DUPLICATE_WINDOW_BOUND_MS = 3000
"""How far back a failover between clusters may redeliver what was acknowledged before
it (`duplicate-window`): PIP-33's snapshot interval (1 s), plus 2 s for what a snapshot
and the update it enables wait on, three passes through the replicators' backlogs (the
request out, the answer back, the update out), at the rates explore draws, two runs at
a time on two cores. The scenario format's 2 s leaves 1 s for all three, which a correct
run here outgrew (geo seed 1: 2.0 s measured from the acknowledgement's confirmation,
2.5 s from its sending)."""


QUIET_END_SHARE = 0.5
"""The share of seeds whose load goes on for a while after their faults are healed
(`quiet_end_s`), as Jepsen's tests end (a seed that then draws no fault keeps the seconds,
a longer quiet run): what a system owes once the faults are over is
then asked of it under load. A contract probe a fault struck runs again and can be judged
(the faults' aftermath past, AFTERMATH_S); a failover between clusters after replication
came back is judged past the checker's allowance for recovery; a subscription held up
must catch up. Faults that go on to the load's end leave none of that to see."""
QUIET_END_S = (20, 45)
"""A quiet end's length in whole seconds, uniform: the faults' aftermath (15 s, in which
the contract's probes wait) and room past it for a round of probes or a few failovers."""


def draw_nemesis(scenario: Scenario, nodes: Sequence[Node] | None, rng: random.Random,
                 quiet_end_s: float = 0.0) -> NemesisSettings:
    """A random schedule over one to four faults the planned nodes can take (those of
    `nodes` in the scenario's clusters, when given); none when they take none (a target
    without node controls). Its faults come in the run's first `duration_s - quiet_end_s`
    seconds, drawn as they would be over a run of that length."""
    faults_s = scenario.duration_s - quiet_end_s
    if nodes is not None:  # a one-cluster workload's faults stay in its cluster
        nodes = [node for node in nodes if node.cluster in scenario.topology.clusters]
    planned = surface(scenario, nodes=nodes)
    takes = [name for name in FAULTS if _can_take(planned, faults_s, name)]
    faults = tuple(rng.sample(takes, min(len(takes), rng.randint(1, 4))))
    faults += _between(scenario.seed, planned, takes, faults)
    low, high = rng.choice(fault_lengths(scenario.topology, faults_s))
    settings = NemesisSettings(
        schedule="random" if faults else "none", faults=faults,
        interval_s=round(quiet_gap(rng, faults_s), 1),
        duration_s=round(rng.uniform(low, high), 1), overlap=rng.choice(OVERLAPS),
        roles=rng.choice(((), STORAGE_ROLES)))
    if rng.random() < ANY_CLUSTER_SHARE and _anywhere(planned, faults):
        settings = replace(settings, aim_clusters="any")
    settings = replace(settings, nodes_at_once=_nodes_at_once(scenario.seed),
                       lengths_s=_lengths(scenario.seed, scenario.topology, faults_s),
                       quiet_end_s=quiet_end_s if faults else 0.0)
    settings = _with_background(settings, scenario.seed, faults_s)
    if not planned.controller:
        return settings
    return replace(settings, roles=settings.roles + rng.choice(((), LEADER_AIMS)))


def _between(seed: int | None, planned: Surface, takes: Sequence[str],
             faults: Sequence[str]) -> tuple[str, ...]:
    """BETWEEN_SHARE's draw: a fault between clusters to add to `faults`, or none."""
    rng = random.Random(f"explore:{seed}:between")
    between = [name for name in takes if isinstance(FAULTS[name], ClusterPair)]
    if (len(planned.clusters) < 2 or not between or rng.random() >= BETWEEN_SHARE
            or any(name in between for name in faults)):
        return ()
    return (rng.choice(between),)


def quiet_gap(rng: random.Random, duration_s: float) -> float:
    """A gap between faults: log-uniform over QUIET_S, its top cut to QUIET_RUN_SHARE of
    the run."""
    low, high = QUIET_S
    return math.exp(rng.uniform(math.log(low), math.log(max(low, min(
        high, QUIET_RUN_SHARE * duration_s)))))


def _nodes_at_once(seed: int | None) -> int:
    """NODES_AT_ONCE's draw for `seed`, from a generator of its own: drawn from the
    scenario's, it would move every draw after it."""
    return random.Random(f"explore:{seed}:nodes-at-once").choice(NODES_AT_ONCE)


def _lengths(seed: int | None, topology: Topology, faults_s: float) -> tuple[float, ...]:
    """MIXED_LENGTHS_SHARE's draw for `seed`: one length from each band of
    `fault_lengths` over `faults_s` seconds of faults, or none (every fault about the
    schedule's `duration_s`)."""
    rng = random.Random(f"explore:{seed}:lengths")
    if rng.random() >= MIXED_LENGTHS_SHARE:
        return ()
    return tuple(round(rng.uniform(low, high), 1)
                 for low, high in fault_lengths(topology, faults_s))


def _with_background(settings: NemesisSettings, seed: int | None,
                     run_s: float) -> NemesisSettings:
    """BACKGROUND_SHARE's draw for `seed`: one of the schedule's faults that can stay on
    beneath the others, begun early and lasting a good part of the `run_s` seconds of
    faults (BACKGROUND_AT, BACKGROUND_LENGTH), or none."""
    rng = random.Random(f"explore:{seed}:background")
    kinds = [name for name in settings.faults if FAULTS[name].can_lie_beneath]
    if rng.random() >= BACKGROUND_SHARE or not kinds:
        return settings
    return replace(settings, background=rng.choice(kinds),
                   background_at_s=round(rng.uniform(*BACKGROUND_AT) * run_s, 1),
                   background_s=round(rng.uniform(*BACKGROUND_LENGTH) * run_s, 1))


def _quiet_end(seed: int | None) -> float:
    """QUIET_END_SHARE's draw for `seed`: the seconds of a quiet end (QUIET_END_S), added
    to the run, or 0. From a generator of its own, so that a run without one is drawn as
    before it existed."""
    rng = random.Random(f"explore:{seed}:quiet-end")
    if rng.random() >= QUIET_END_SHARE:
        return 0.0
    return float(rng.randint(*QUIET_END_S))


def _anywhere(planned: Surface, faults: Sequence[str]) -> bool:
    """Whether the faults may land in any of several clusters (`aim_clusters = "any"`):
    every node each could pick there can take it."""
    return len(planned.clusters) > 1 and all(
        _every_pick_can(planned, FAULTS[name], cluster)
        for name in faults for cluster in planned.clusters)


def _can_take(planned: Surface, duration_s: float, fault: str) -> bool:
    try:
        build_schedule(NemesisSettings(schedule="random", faults=(fault,)),
                       planned, 0, duration_s, "explore")
    except FaultPlanError:
        return False
    return _every_pick_can(planned, FAULTS[fault])


def _every_pick_can(planned: Surface, fault: Fault, cluster: str | None = None) -> bool:
    """Every node a random schedule may aim `fault` at can take it. The schedule picks one
    of the fault's default roles, then a node of that role, from the run's seed: on our
    backends every node offers the same, but a target file may list no node of a role, or
    control its brokers and not its bookies, and the run of some seed would then be
    refused. A runtime target (the topic's owner, the controller's leader) is a broker.
    `cluster`: the nodes of that cluster, by default the first."""
    for default in fault.defaults:
        names = planned.of_role(default if default in ROLES else "broker", cluster)
        if not names or not all(planned.can(name, need)
                                for name in names for need in fault.needs):
            return False
    return True


def liveness_bound_ms(nemesis: NemesisSettings, topology: Topology) -> int:
    """How long a key may stay unwritable, or a subscription stalled: the longest fault
    the schedule draws (one and a half times its longest length; twice that where a fault
    may begin inside another), after its background when it has one (a fault begun inside
    may outlast it), the session timeout, and `HEAL_MARGIN_S`."""
    longest = ((3.0 if nemesis.overlap else 1.5) * longest_length_s(nemesis)
               if nemesis.faults else 0.0) + (nemesis.background_s if nemesis.background
                                              else 0.0)
    return round(1000 * (longest + topology.session_timeout_ms / 1000 + HEAL_MARGIN_S))


def availability_held(nemesis: NemesisSettings, topology: Topology) -> bool:
    """Whether a drawn scenario holds `unavailable` to the liveness bound. Under the
    `shutdown` policy a broker whose session ends (expired, or outlived by a pause or a
    cut from ZooKeeper) halts, and nothing starts it again, as in a cluster without a
    supervisor: a few such faults take every broker down for the rest of the load, which
    no bound on one fault's length covers."""
    return (topology.session_expired_policy != "shutdown"
            or all(FAULTS[name].keeps_sessions for name in nemesis.faults))


def offered_kinds(backend: str, kinds: Sequence[str]) -> list[str]:
    """The workloads of `kinds` that `backend` can run, in `KINDS` order."""
    return [kind for kind in KINDS if kind in kinds
            and kind not in backend_named(backend).unsupported_workloads]


def among(scenario: Scenario, workloads: Sequence[str]) -> Scenario:
    """A scenario drawn from `workloads` only (`starquake explore --workloads`), named for
    them (`explore-topic-3`), so that it is not taken for the scenario the same seed draws
    among all of them, which may be of another workload."""
    name = f"explore-{'+'.join(workloads)}-{scenario.seed}"
    return replace(scenario, name=name, path=Path(f"{name}.toml"),
                   description=f"Drawn by starquake explore from seed {scenario.seed}, "
                               f"among the workloads {', '.join(workloads)}.")


def draw_scenario(seed: int, backend: str, *, nodes: Sequence[Node] | None = None,
                  mutants: tuple[str, ...] = (), kinds: Sequence[str] = KINDS,
                  narrow: Callable[[Scenario], Scenario] | None = None) -> Scenario:
    """The scenario seed `seed` draws for `backend` (or for the `nodes` of a target
    starquake did not start), with `mutants` switched on and `valid` expected. `kinds`:
    the workloads to draw from (those the target can run). `narrow` fits the drawn
    workload and topology to a target (scenarios/offer.py) before the faults are drawn
    over its nodes and the liveness bound over its session timeout.

    The draw is a function of the seed, the backend (or nodes) and `kinds` alone: it
    draws with no mutant, and `mutants` is set on the finished scenario, so a seed's
    scenario is the same whichever mutants are on. That is what lets `starquake detect
    --explore` run every mutant on the same scenarios and their clean control."""
    rng = random.Random(f"explore:{seed}")
    kind = rng.choice(offered_kinds(backend, kinds))
    quiet_end_s = _quiet_end(seed)
    duration_s = float(rng.randint(20, 60)) + quiet_end_s
    topology = draw_topology(kind, backend, rng)
    scenario = Scenario(name=f"explore-{seed}", path=Path(f"explore-{seed}.toml"),
                        duration_s=duration_s,
                        seed=seed, description=f"Drawn by starquake explore from seed {seed}.",
                        topology=topology, workload=draw_workload(
                            kind, Draw(rng, duration_s, rng.random() < ALL_AT_ONCE_SHARE)))
    if narrow is not None:
        scenario = narrow(scenario)
    nemesis = draw_nemesis(scenario, nodes, rng, quiet_end_s)
    # For a target only (scenarios/offer.py lifts it to the shutdown the file declares);
    # drawn for every backend, so that the draws after it are the same on each.
    target_held = rng.choice((False, True))
    if rng.random() < QUIET_SHARE:
        nemesis = nemesis.without_faults()
    bound = liveness_bound_ms(nemesis, scenario.topology)
    held = availability_held(nemesis, scenario.topology)
    if nodes is not None:
        zombie = bound if target_held else None
    elif backend_named(scenario.topology.backend).reference_brokers:
        zombie = shutdown_bound_ms(scenario.topology)
    else:  # Pulsar's brokers: it documents no bound (its Target's metadata_loss_shutdown_s)
        zombie = None
    return replace(scenario, nemesis=nemesis, mutants=mutants,
                   checkers=Checkers(duplicate_window_bound_ms=DUPLICATE_WINDOW_BOUND_MS,
                                     unavailable_bound_ms=bound if held else None,
                                     zombie_broker_bound_ms=zombie,
                                     stalled_subscription_bound_ms=bound))


def shutdown_bound_ms(topology: Topology) -> int:
    """How long one of our brokers may stay up unable to serve (`zombie-broker`): what
    PIP-57 has it promise, a session timeout and, under `reconnect`, its retries, plus
    `HEALTH_SLACK_S`. Bounding it by the faults' length instead could never catch a
    broker that does not shut down, as it is unhealthy only while its fault lasts."""
    promised = metadata_loss_shutdown_s(topology.session_expired_policy,
                                        topology.session_timeout_ms / 1000)
    return round(1000 * (promised + HEALTH_SLACK_S))
