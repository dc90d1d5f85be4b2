"""Workloads: what drives a run's clients, chosen by the scenario's `[workload] kind`.

Only `topic` exists today. The scalable-topic workload (issue 5) and the geo-replication
workloads (issue 7) will register here, each a `Workload` (harness/workloads/base.py).
"""

from __future__ import annotations

from harness.workloads.base import Workload, WorkloadContext
from scenarios.format import Scenario, ScenarioError

AVAILABLE = ("topic",)
PLANNED = {"scalable": "issue 5, scalable topics", "geo": "issue 7, geo-replication",
           "migration": "issue 7, tenant migration"}


def check_workload(scenario: Scenario) -> None:
    """Raise ScenarioError naming the key when the scenario asks for a workload that
    cannot run yet, or on a topology it cannot use."""
    kind = scenario.workload.kind
    if kind in PLANNED:
        raise ScenarioError(f"{scenario.path}: workload.kind: the {kind} workload is not "
                            f"available yet ({PLANNED[kind]}); available: "
                            f"{', '.join(AVAILABLE)}")
    if kind == "topic" and len(scenario.topology.clusters) != 1:
        raise ScenarioError(f"{scenario.path}: topology.clusters: the topic workload runs on "
                            f"one cluster, got {list(scenario.topology.clusters)}")


def make_workload(scenario: Scenario, context: WorkloadContext) -> Workload:
    check_workload(scenario)
    from harness.workloads.topic import TopicWorkload  # imports the client library

    return TopicWorkload(context)
