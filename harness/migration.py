"""Moving a tenant from one cluster to another with geo-replication, in the five steps of
the tenant-migration article ("Migrating Tenants across Clusters with Pulsar's
Geo-replication"), driven only through the admin APIs of the two clusters and of the
lookup service that the tenant's clients use as their service URL.

1. metadata: each cluster learns the other; the tenant and its namespaces exist in the
   target, replicated to both clusters;
2. data: the source namespaces replicate to the target too;
3. consumption progress: wait until every replicated subscription of the source exists in
   the target (PIP-33 updates; with `--replicate-individually-deleted` they also carry what
   was acknowledged out of order) and the source's replication backlog is empty;
4. switch: the lookup service sends the tenant to the target, and the source unloads the
   namespaces' bundles, so every client looks its topics up again and lands in the target;
5. clean up: once what reached the source before the switch has been replicated, the
   target stops replicating back, and the source deletes the tenant's topics, namespaces
   and the tenant itself.

Replicated subscriptions need clients that subscribe with `replicate_subscription_state`,
and traffic: a subscription reaches the target with the first snapshot its mark-delete
passes (PIP-33), so an idle subscription blocks step 3 until `timeout`.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.admin_api import AdminError, admin_request


class MigrationStuck(Exception):
    """A step did not finish in time; the message says which and what it waited for."""


@dataclass(frozen=True)
class ClusterEndpoint:
    name: str
    admin_url: str
    """Any broker's admin URL (topic requests are redirected to the owner)."""
    broker_service_url: str


@dataclass(frozen=True)
class MigrationPlan:
    tenant: str
    namespaces: tuple[str, ...]
    """Local names (`ns`, not `tenant/ns`)."""
    source: ClusterEndpoint
    target: ClusterEndpoint
    lookup_admin_url: str
    timeout: float = 120.0
    """Per waiting step."""


def migrate_tenant(plan: MigrationPlan,
                   on_step: Callable[[str], None] = lambda _step: None) -> None:
    """Run the five steps in order; `on_step` hears each step's name as it starts."""
    for name, step in (("metadata", _sync_metadata), ("data", _replicate_data),
                       ("consumption progress", _sync_progress), ("switch", _switch),
                       ("clean up", _clean_up)):
        on_step(name)
        step(plan)


def _call(cluster: ClusterEndpoint, method: str, path: str, body: Any = None) -> Any:
    return admin_request(cluster.admin_url, method, path, body)


def _put_or_post(cluster: ClusterEndpoint, path: str, body: Any) -> None:
    """Create (PUT) or, when it exists, update (POST)."""
    try:
        _call(cluster, "PUT", path, body)
    except AdminError as exc:
        if exc.status != 409:
            raise
        _call(cluster, "POST", path, body)


def _sync_metadata(plan: MigrationPlan) -> None:
    both = [plan.source.name, plan.target.name]
    for here, other in ((plan.source, plan.target), (plan.target, plan.source)):
        _put_or_post(here, f"/admin/v2/clusters/{other.name}",
                     {"serviceUrl": other.admin_url,
                      "brokerServiceUrl": other.broker_service_url})
        _put_or_post(here, f"/admin/v2/tenants/{plan.tenant}", {"allowedClusters": both})
    for namespace in plan.namespaces:
        path = f"/admin/v2/namespaces/{plan.tenant}/{namespace}"
        try:
            _call(plan.target, "PUT", path, {"replication_clusters": both})
        except AdminError as exc:
            if exc.status != 409:
                raise
            _call(plan.target, "POST", f"{path}/replication", both)


def _replicate_data(plan: MigrationPlan) -> None:
    for namespace in plan.namespaces:
        _call(plan.source, "POST", f"/admin/v2/namespaces/{plan.tenant}/{namespace}/replication",
              [plan.source.name, plan.target.name])


def _topics(plan: MigrationPlan, cluster: ClusterEndpoint) -> list[str]:
    return [topic for namespace in plan.namespaces
            for topic in _call(cluster, "GET",
                               f"/admin/v2/namespaces/{plan.tenant}/{namespace}/topics")]


def _stats(cluster: ClusterEndpoint, topic: str) -> dict[str, Any]:
    return _call(cluster, "GET", f"/admin/v2/{topic.replace('://', '/')}/stats")  # type: ignore[no-any-return]


def _waiting_for(plan: MigrationPlan, *, subscriptions: bool) -> list[str]:
    """What the source still has to hand to the target (empty when done)."""
    missing = []
    for topic in _topics(plan, plan.source):
        stats = _stats(plan.source, topic)
        replication = stats.get("replication", {}).get(plan.target.name)
        if replication is None or replication["msgBacklog"] > 0:
            missing.append(f"{topic}: replication backlog to {plan.target.name}")
        if not subscriptions:
            continue
        replicated = [name for name, sub in stats.get("subscriptions", {}).items()
                      if sub.get("isReplicated")]
        if replicated:
            there = _stats(plan.target, topic).get("subscriptions", {})
            missing += [f"{topic}: subscription {name} in {plan.target.name}"
                        for name in replicated if name not in there]
    return missing


def _wait(plan: MigrationPlan, step: str, missing: Callable[[], list[str]]) -> None:
    deadline = time.monotonic() + plan.timeout
    while True:
        try:
            left = missing()
        except AdminError as exc:
            left = [str(exc)]
        if not left:
            return
        if time.monotonic() > deadline:
            raise MigrationStuck(f"{step}: still waiting after {plan.timeout} s for "
                                 f"{'; '.join(left)}")
        time.sleep(0.5)


def _sync_progress(plan: MigrationPlan) -> None:
    _wait(plan, "consumption progress", lambda: _waiting_for(plan, subscriptions=True))


def _switch(plan: MigrationPlan) -> None:
    admin_request(plan.lookup_admin_url, "PUT", f"/lookup/v2/tenants/{plan.tenant}",
                  {"cluster": plan.target.name})
    for namespace in plan.namespaces:
        path = f"/admin/v2/namespaces/{plan.tenant}/{namespace}"
        for bundle in _bundle_ranges(_call(plan.source, "GET", f"{path}/bundles")):
            _call(plan.source, "PUT", f"{path}/{bundle}/unload")


def _bundle_ranges(bundles: dict[str, Any]) -> list[str]:
    boundaries = bundles["boundaries"]
    return [f"{low}_{high}" for low, high in itertools.pairwise(boundaries)]


def _clean_up(plan: MigrationPlan) -> None:
    _wait(plan, "clean up", lambda: _waiting_for(plan, subscriptions=False))
    for namespace in plan.namespaces:
        _call(plan.target, "POST", f"/admin/v2/namespaces/{plan.tenant}/{namespace}/replication",
              [plan.target.name])
    # Before deleting in the source: a replicator from the target would create it again.
    _wait(plan, "clean up", lambda: [
        f"{topic}: replication from {plan.target.name} to {plan.source.name} to stop"
        for topic in _topics(plan, plan.target)
        if plan.source.name in _stats(plan.target, topic).get("replication", {})])
    for topic in _topics(plan, plan.source):
        _call(plan.source, "DELETE", f"/admin/v2/{topic.replace('://', '/')}?force=true")
    for namespace in plan.namespaces:
        _call(plan.source, "DELETE", f"/admin/v2/namespaces/{plan.tenant}/{namespace}")
    _call(plan.source, "DELETE", f"/admin/v2/tenants/{plan.tenant}")
