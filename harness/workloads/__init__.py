"""Workloads: what drives a run's clients, chosen by the scenario's `[workload] kind`.

Each is a `Workload` (harness/workloads/base.py): `topic` (harness/workloads/topic.py),
`scalable` (harness/workloads/scalable.py), `contract` (harness/workloads/contract/,
the client contract's probes) and `auth` (its authentication probes only) on one cluster; `geo`
(harness/workloads/geo.py) and `migration` (harness/workloads/migration.py) on two or
more.
"""

from __future__ import annotations

from harness.workloads.base import Workload, WorkloadContext

ONE_CLUSTER = ("topic", "scalable", "contract", "auth")
SEVERAL_CLUSTERS = ("geo", "migration")


def cluster_count_problem(kind: str, clusters: int) -> str | None:
    """Why workload `kind` cannot run on `clusters` clusters; None when it can."""
    if kind in ONE_CLUSTER and clusters != 1:
        return f"the {kind} workload runs on one cluster"
    if kind in SEVERAL_CLUSTERS and clusters < 2:
        return f"the {kind} workload needs at least two clusters"
    return None


def groups_problem(kind: str, groups: tuple[str, ...]) -> str | None:
    """Why `[workload] groups` cannot be run by workload `kind`; None when it can."""
    if not groups:
        return None
    if kind != "contract":
        return f"only the contract workload runs probe groups, not the {kind} workload"
    from harness.workloads.contract.workload import GROUP_NAMES

    unknown = [name for name in groups if name not in GROUP_NAMES]
    if unknown:
        return f"no probe group {', '.join(unknown)}; the groups are {', '.join(GROUP_NAMES)}"
    return None


def crashes_problem(kind: str, crash_interval_s: float) -> str | None:
    """Why `[workload] crash_interval_s` cannot be run by workload `kind`; None when it can
    (a knob the workload would ignore would make a silently different run)."""
    if crash_interval_s and kind != "topic":
        return f"only the topic workload crashes consumers, not the {kind} workload"
    return None


def make_workload(context: WorkloadContext) -> Workload:
    """The workload `context.settings.kind` names."""
    kind = context.settings.kind
    if kind == "scalable":
        from harness.workloads.scalable import ScalableWorkload

        return ScalableWorkload(context)
    if kind == "geo":
        from harness.workloads.geo import GeoWorkload

        return GeoWorkload(context)
    if kind == "migration":
        from harness.workloads.migration import MigrationWorkload

        return MigrationWorkload(context)
    if kind == "contract":
        from harness.workloads.contract import ContractWorkload
        from harness.workloads.contract.workload import selected_groups

        return ContractWorkload(context, *selected_groups(context.settings.groups))
    if kind == "auth":
        from harness.workloads.contract import ContractWorkload, auth

        return ContractWorkload(context, auth.GROUPS, beside=())
    from harness.workloads.topic import TopicWorkload  # imports the client library

    return TopicWorkload(context)
