"""The workload registry: every `[workload] kind` a scenario may name, the class that runs
it, the knobs it declares and how many clusters it needs.

Adding a workload is a module with its class (and the class's nested `Knobs`) and one line
in `WORKLOADS`; the scenario reader, `make_workload` and the documentation test take it
from here (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from harness.workloads.base import Workload, WorkloadContext
from harness.workloads.contract.workload import AuthWorkload, ContractWorkload
from harness.workloads.geo import GeoWorkload
from harness.workloads.knobs import Knobs, declared
from harness.workloads.migration import MigrationWorkload
from harness.workloads.scalable import ScalableWorkload
from harness.workloads.topic import TopicWorkload


@dataclass(frozen=True)
class WorkloadKind:
    """One workload a scenario can name."""

    name: str
    workload: Callable[[WorkloadContext], Workload]
    knobs: type[Knobs]
    """The `Knobs` its class declares: what the scenario reader takes besides the knobs of
    `WorkloadSettings` itself."""
    clusters: Literal["one", "several"]
    uses_clusters: int | None = None
    """Of several clusters, how many it puts to use (None: every one it is given): what
    `starquake explore` draws at most."""


WORKLOADS: dict[str, WorkloadKind] = {kind.name: kind for kind in (
    WorkloadKind("scalable", ScalableWorkload, ScalableWorkload.Knobs, "one"),
    WorkloadKind("topic", TopicWorkload, TopicWorkload.Knobs, "one"),
    WorkloadKind("geo", GeoWorkload, GeoWorkload.Knobs, "several"),
    WorkloadKind("migration", MigrationWorkload, MigrationWorkload.Knobs, "several", 2),
    WorkloadKind("contract", ContractWorkload, ContractWorkload.Knobs, "one"),
    WorkloadKind("auth", AuthWorkload, AuthWorkload.Knobs, "one"),
)}
"""By name, in the order error messages list them."""


ONE_CLUSTER = tuple(name for name, kind in WORKLOADS.items() if kind.clusters == "one")


def cluster_count_problem(kind: str, clusters: int) -> str | None:
    """Why workload `kind` cannot run on `clusters` clusters; None when it can."""
    needs = WORKLOADS[kind].clusters
    if needs == "one" and clusters != 1:
        return f"the {kind} workload runs on one cluster"
    if needs == "several" and clusters < 2:
        return f"the {kind} workload needs at least two clusters"
    return None


def readers_of(knob: str) -> tuple[str, ...]:
    """The workloads that declare `knob`."""
    return tuple(name for name, kind in WORKLOADS.items()
                 if any(spec.name == knob for spec in declared(kind.knobs)))


def make_workload(context: WorkloadContext) -> Workload:
    """The workload `context.settings.kind` names."""
    return WORKLOADS[context.settings.kind].workload(context)
