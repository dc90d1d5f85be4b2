"""A scenario's fault schedule: the scenario's `[nemesis]` table drawn over the nodes its
topology will start, with the seed. The one place a scenario meets the nemesis's registry
and a deployment's nodes, so `scenario validate`, `run` and `reproduce` plan alike."""

from __future__ import annotations

from harness.topology import planned_nodes
from nemesis.faults.base import FaultPlanError, Surface
from nemesis.schedule import Schedule, build_schedule
from scenarios.format import Scenario, ScenarioError


def surface(scenario: Scenario, backend: str | None = None) -> Surface:
    """What the scenario's faults may aim at: the nodes its deployment (on `backend`, by
    default the scenario's) will start, and the scalable workload's controller."""
    return Surface(planned_nodes(scenario.topology, backend),
                   controller=scenario.workload.kind == "scalable")


def schedule_for(scenario: Scenario, seed: int, backend: str | None = None) -> Schedule:
    """The run's schedule; raises ScenarioError naming file and key when the deployment
    cannot take a fault or a target names no node."""
    try:
        return build_schedule(scenario.nemesis, surface(scenario, backend), seed,
                              scenario.duration_s, str(scenario.path))
    except FaultPlanError as exc:
        raise ScenarioError(str(exc)) from None
