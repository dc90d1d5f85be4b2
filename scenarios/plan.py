"""A scenario's fault schedule: the scenario's `[nemesis]` table drawn over the nodes its
topology will start, with the seed. The one place a scenario meets the nemesis's registry
and a deployment's nodes, so `scenario validate`, `run` and `reproduce` plan alike."""

from __future__ import annotations

from collections.abc import Sequence

from harness.backends import backend as backend_named
from harness.target import Node
from harness.topology import planned_nodes
from nemesis.faults.base import FaultPlanError, Surface
from nemesis.schedule import Schedule, build_schedule
from scenarios.format import Scenario, ScenarioError


def surface(scenario: Scenario, backend: str | None = None,
            nodes: Sequence[Node] | None = None) -> Surface:
    """What the scenario's faults may aim at: `nodes` (a Target starquake did not start),
    else the nodes its deployment (on `backend`, by default the scenario's) will start; and
    the scalable workload's controller."""
    planned = tuple(nodes) if nodes is not None else planned_nodes(scenario.topology, backend)
    shared = nodes is None and backend_named(backend or scenario.topology.backend
                                             ).shared_replication_list
    return Surface(planned, controller=scenario.workload.kind == "scalable",
                   shared_replication_list=shared)


def schedule_for(scenario: Scenario, seed: int, backend: str | None = None,
                 nodes: Sequence[Node] | None = None) -> Schedule:
    """The run's schedule over `surface(scenario, backend, nodes)`; raises ScenarioError
    naming file and key when the Target cannot take a fault or a target names no node."""
    try:
        return build_schedule(scenario.nemesis, surface(scenario, backend, nodes), seed,
                              scenario.duration_s, str(scenario.path))
    except FaultPlanError as exc:
        raise ScenarioError(str(exc)) from None
