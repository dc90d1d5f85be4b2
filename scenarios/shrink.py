"""Smaller neighbours of a scenario, for `starquake shrink` (docs/explore.md): each removes
or reduces one thing (a fault, a shape of the random schedule, the fault lengths, the
run's length, a knob back to its default, a client, a key, a node, and last every fault
at once), and `size` says how much a scenario holds, so a search can keep the smallest
that still fails. Pure: the search and its runs are in starquake/run/shrink.py."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from harness.workloads.knobs import declared
from harness.workloads.registry import WORKLOADS
from harness.workloads.settings import WorkloadSettings
from nemesis.schedule import NemesisSettings, longest_length_s
from scenarios.format import Scenario

SHORTEST_RUN_S = 10.0
SHORTEST_FAULT_S = 1.0
SIZED = frozenset({"producers", "consumers", "keys", "rate"})
"""Knobs `size` weighs by their value (fewer is smaller), not by whether they are set."""


def size(scenario: Scenario) -> float:
    """What a reader of the scenario must take in: faults weigh most, then seconds of run,
    nodes, clients and keys, and every knob of the workload or shape of the random
    schedule away from its default."""
    nemesis = scenario.nemesis
    faults = len(nemesis.timeline) if nemesis.schedule == "timeline" else len(nemesis.faults)
    fault_s = (longest_length_s(nemesis) if faults else 0.0) + (
        nemesis.background_s if nemesis.background else 0.0)
    topology = scenario.topology
    nodes = topology.zookeepers + topology.bookies + topology.brokers
    workload = scenario.workload
    clients = workload.producers + workload.consumers
    return (10 * faults + fault_s + len(_shapes_set(nemesis)) + scenario.duration_s / 10
            + nodes + clients
            + workload.keys / 100 + workload.rate / 100 + _knobs_set(scenario))


SCHEDULE_SHAPES = {
    "nodes_at_once": "faults strike one node at a time",
    "overlap": "faults one after another",
    "roles": "faults at their own aims only",
    "aim_clusters": "faults in the first cluster only",
    "lengths_s": "every fault about the same length",
    "background": "no fault beneath the others",
}
"""The random schedule's settings that shape where and how its faults strike, and what
putting each back to its default is called."""
_PLAIN = NemesisSettings()


def _shapes_set(nemesis: NemesisSettings) -> dict[str, str]:
    """The random schedule's shapes away from their defaults, and what undoes each."""
    if nemesis.schedule != "random":
        return {}
    return {name: what for name, what in SCHEDULE_SHAPES.items()
            if getattr(nemesis, name) != getattr(_PLAIN, name)}


def _knobs_set(scenario: Scenario) -> int:
    workload = scenario.workload
    own = declared(WORKLOADS[workload.kind].knobs)
    common = [s for s in declared(WorkloadSettings) if s.name not in SIZED]
    return (sum(1 for s in common if getattr(workload, s.name) != s.default)
            + sum(1 for s in own if getattr(workload.knobs, s.name) != s.default))


def candidates(scenario: Scenario) -> Iterator[tuple[str, Scenario]]:
    """(what was removed, the smaller scenario), the boldest steps first. Some may not be
    valid scenarios (knobs that no longer make sense together): the caller checks.

    Every fault at once comes last: a search takes the first neighbour that still fails, so
    a run that needs its faults pays for that try only when nothing else is left to take,
    while a bug that needs none still ends with a quiet scenario."""
    yield from _fewer_faults(scenario)
    yield from _shorter(scenario)
    yield from _knobs_to_default(scenario)
    yield from _fewer_clients(scenario)
    yield from _fewer_nodes(scenario)
    if scenario.nemesis.schedule != "none":
        yield "every fault removed", dataclasses.replace(
            scenario, nemesis=scenario.nemesis.without_faults())


def _fewer_faults(scenario: Scenario) -> Iterator[tuple[str, Scenario]]:
    nemesis = scenario.nemesis
    if nemesis.schedule == "random":
        if len(nemesis.faults) > 1:
            for fault in nemesis.faults:
                kept = tuple(f for f in nemesis.faults if f != fault)
                yield f"fault {fault} removed", _with_nemesis(scenario, faults=kept)
    elif nemesis.schedule == "timeline" and len(nemesis.timeline) > 1:
        for n, item in enumerate(nemesis.timeline):
            kept_items = nemesis.timeline[:n] + nemesis.timeline[n + 1:]
            yield (f"timeline fault {n} ({item.fault} at {item.at_s:g} s) removed",
                   _with_nemesis(scenario, timeline=kept_items))
    for name, what in _shapes_set(nemesis).items():
        plain = (nemesis.without_background() if name == "background"
                 else dataclasses.replace(nemesis, **{name: getattr(_PLAIN, name)}))
        yield what, dataclasses.replace(scenario, nemesis=plain)
    if nemesis.schedule == "random" and longest_length_s(nemesis) / 2 >= SHORTEST_FAULT_S:
        yield (f"faults halved to about {longest_length_s(nemesis) / 2:g} s",
               _with_nemesis(scenario, duration_s=nemesis.duration_s / 2,
                             lengths_s=tuple(length / 2 for length in nemesis.lengths_s),
                             background_s=nemesis.background_s / 2))


def _shorter(scenario: Scenario) -> Iterator[tuple[str, Scenario]]:
    """The quiet end cut off (the same faults, the load ending at the final heal), then the
    run halved, a quiet end keeping its share of it."""
    quiet_end_s = scenario.nemesis.quiet_end_s
    if quiet_end_s:
        yield (f"quiet end cut off (run {scenario.faults_s:g} s)", dataclasses.replace(
            scenario, duration_s=scenario.faults_s,
            nemesis=dataclasses.replace(scenario.nemesis, quiet_end_s=0.0)))
    if scenario.duration_s / 2 >= SHORTEST_RUN_S:
        half = scenario.duration_s / 2
        yield f"run halved to {half:g} s", dataclasses.replace(
            scenario, duration_s=half,
            nemesis=dataclasses.replace(scenario.nemesis, quiet_end_s=quiet_end_s / 2))


def _knobs_to_default(scenario: Scenario) -> Iterator[tuple[str, Scenario]]:
    workload = scenario.workload
    for spec in declared(WorkloadSettings):
        if spec.name not in SIZED and getattr(workload, spec.name) != spec.default:
            yield (f"{spec.name} back to {spec.default!r}",
                   _with_workload(scenario, **{spec.name: spec.default}))
    for spec in declared(WORKLOADS[workload.kind].knobs):
        if getattr(workload.knobs, spec.name) != spec.default:
            knobs = dataclasses.replace(workload.knobs, **{spec.name: spec.default})
            yield f"{spec.name} back to {spec.default!r}", _with_workload(scenario, knobs=knobs)


def _fewer_clients(scenario: Scenario) -> Iterator[tuple[str, Scenario]]:
    workload = scenario.workload
    for name in ("producers", "consumers", "keys", "rate"):
        value = getattr(workload, name)
        if value > 1:
            smaller = value // 2 if name in ("keys", "rate") else value - 1
            yield f"{name} {value} -> {smaller}", _with_workload(scenario, **{name: smaller})


def _fewer_nodes(scenario: Scenario) -> Iterator[tuple[str, Scenario]]:
    topology = scenario.topology
    for role in ("brokers", "bookies", "zookeepers"):
        count = getattr(topology, role)
        if count > 1:
            counts: dict[str, Any] = {role: 1 if role == "zookeepers" else count - 1}
            fewer = dataclasses.replace(topology, **counts)
            yield (f"{role} {count} -> {getattr(fewer, role)}",
                   dataclasses.replace(scenario, topology=fewer))


def _with_nemesis(scenario: Scenario, **changes: Any) -> Scenario:
    return dataclasses.replace(scenario,
                               nemesis=dataclasses.replace(scenario.nemesis, **changes))


def _with_workload(scenario: Scenario, **changes: Any) -> Scenario:
    return dataclasses.replace(scenario,
                               workload=dataclasses.replace(scenario.workload, **changes))
