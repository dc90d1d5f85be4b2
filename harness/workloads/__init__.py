"""Workloads: what drives a run's clients, chosen by the scenario's `[workload] kind`.

Each is a `Workload` (harness/workloads/base.py): `topic` (harness/workloads/topic.py),
`scalable` (harness/workloads/scalable.py), `contract` (harness/workloads/contract/,
the client contract's probes) and `auth` (its authentication probes only) on one cluster; `geo`
(harness/workloads/geo.py) and `migration` (harness/workloads/migration.py) on two or
more.
"""

from __future__ import annotations

from harness.workloads.base import Workload, WorkloadContext
from harness.workloads.settings import WorkloadSettings

ONE_CLUSTER = ("topic", "scalable", "contract", "auth")
SEVERAL_CLUSTERS = ("geo", "migration")


def cluster_count_problem(kind: str, clusters: int) -> str | None:
    """Why workload `kind` cannot run on `clusters` clusters; None when it can."""
    if kind in ONE_CLUSTER and clusters != 1:
        return f"the {kind} workload runs on one cluster"
    if kind in SEVERAL_CLUSTERS and clusters < 2:
        return f"the {kind} workload needs at least two clusters"
    return None


KNOB_READERS: dict[str, tuple[str, ...]] = {
    "subscription_mode": ("topic", "geo", "migration"),
    "crash_interval_s": ("topic",),
    "initial_segments": ("scalable",),
    "layout_interval_s": ("scalable",),
    "send_timeout_s": ("scalable", "topic", "geo", "migration"),
    "processes": ("topic", "geo", "migration"),
    "edge_key_share": ("scalable",),
    "layout_lag_ms": ("scalable",),
    "late_subscription": ("scalable",),
    "merge_union_probe": ("scalable",),
    "process_ms": ("scalable", "topic"),
    "receiver_queue": ("topic",),
    "nack_share": ("topic",),
    "consumer_lag_s": ("geo", "migration"),
    "failover_every_s": ("geo",),
    "groups": ("contract",),
}
"""`[workload]` knobs that only some workloads read -> those workloads. Elsewhere a value
other than the default is refused: the workload would ignore it, and the run would differ
from what the scenario says without a word."""


def knob_problem(settings: WorkloadSettings) -> tuple[str, str] | None:
    """(knob, why) for the first knob `settings` sets that its workload does not read, or a
    probe group that does not exist; None when every knob is taken."""
    defaults = WorkloadSettings()
    for name, readers in KNOB_READERS.items():
        if settings.kind not in readers and getattr(settings, name) != getattr(defaults, name):
            return name, f"only {_the_workloads(readers)} it, not the {settings.kind} workload"
    if settings.groups:
        from harness.workloads.contract.workload import GROUP_NAMES

        unknown = [name for name in settings.groups if name not in GROUP_NAMES]
        if unknown:
            return "groups", (f"no probe group {', '.join(unknown)}; the groups are "
                              f"{', '.join(GROUP_NAMES)}")
    return None


def _the_workloads(kinds: tuple[str, ...]) -> str:
    """`the topic workload takes`, `the topic, geo and migration workloads take`."""
    if len(kinds) == 1:
        return f"the {kinds[0]} workload takes"
    return f"the {', '.join(kinds[:-1])} and {kinds[-1]} workloads take"


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
