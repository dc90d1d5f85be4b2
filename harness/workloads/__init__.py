"""Workloads: what drives a run's clients, chosen by the scenario's `[workload] kind`.

Each is a `Workload` (harness/workloads/base.py): `topic` (harness/workloads/topic.py)
and `scalable` (harness/workloads/scalable.py) on one cluster; `geo`
(harness/workloads/geo.py) and `migration` (harness/workloads/migration.py) on two or
more.
"""

from __future__ import annotations

from harness.workloads.base import Workload, WorkloadContext
from scenarios.format import Scenario, ScenarioError

ONE_CLUSTER = ("topic", "scalable")
SEVERAL_CLUSTERS = ("geo", "migration")


def check_workload(scenario: Scenario) -> None:
    """Raise ScenarioError naming the key when the scenario asks for a workload on a
    topology it cannot use."""
    kind = scenario.workload.kind
    if kind in ONE_CLUSTER and len(scenario.topology.clusters) != 1:
        raise ScenarioError(f"{scenario.path}: topology.clusters: the {kind} workload runs "
                            f"on one cluster, got {list(scenario.topology.clusters)}")
    if kind in SEVERAL_CLUSTERS and len(scenario.topology.clusters) < 2:
        raise ScenarioError(f"{scenario.path}: topology.clusters: the {kind} workload "
                            f"needs at least two clusters, got "
                            f"{list(scenario.topology.clusters)}")


def make_workload(scenario: Scenario, context: WorkloadContext) -> Workload:
    check_workload(scenario)
    if scenario.workload.kind == "scalable":
        from harness.workloads.scalable import ScalableWorkload

        return ScalableWorkload(context)
    if scenario.workload.kind == "geo":
        from harness.workloads.geo import GeoWorkload

        return GeoWorkload(context)
    if scenario.workload.kind == "migration":
        from harness.workloads.migration import MigrationWorkload

        return MigrationWorkload(context)
    from harness.workloads.topic import TopicWorkload  # imports the client library

    return TopicWorkload(context)
