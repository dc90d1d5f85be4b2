"""Two or three real clusters that geo-replicate one namespace, reached only through the
admin REST API and the binary protocol (as a third party's clusters would be).

`link(clusters)` does what an operator does in Pulsar: every cluster's metadata learns the
others' URLs (`PUT /admin/v2/clusters/{name}`), and the tenant and namespace are created in
each with the full list of replication clusters.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from harness.admin_api import admin_request
from harness.targets.local.cluster import LocalCluster

TENANT = "geo"
NAMESPACE = f"{TENANT}/replicated"


class GeoCluster(Protocol):
    """What the geo scenes need of a cluster: a `LocalCluster` (tests/geo) or a container
    deployment's `TargetCluster` (tests/geo_docker)."""

    @property
    def service_urls(self) -> Sequence[str]: ...

    @property
    def admin_urls(self) -> Sequence[str]: ...


def cluster_name(cluster: GeoCluster) -> str:
    """A `LocalCluster` keeps its name in its settings; a `TargetCluster` holds it."""
    settings = getattr(cluster, "settings", None)
    return str(settings.name if settings is not None else cluster.name)


def admin(cluster: GeoCluster, method: str, path: str, body: Any = None) -> Any:
    """One admin request to the cluster's first broker; the parsed JSON answer or None."""
    return admin_request(cluster.admin_urls[0], method, path, body)


def link(clusters: Sequence[LocalCluster]) -> None:
    names = [c.settings.name for c in clusters]
    for cluster in clusters:
        for other in clusters:
            if other is not cluster:
                admin(cluster, "PUT", f"/admin/v2/clusters/{other.settings.name}",
                      {"serviceUrl": other.admin_urls[0],
                       "brokerServiceUrl": other.service_urls[0]})
        admin(cluster, "PUT", f"/admin/v2/tenants/{TENANT}", {"allowedClusters": names})
        admin(cluster, "PUT", f"/admin/v2/namespaces/{NAMESPACE}",
              {"replication_clusters": names})


def topic_stats(cluster: GeoCluster, topic: str) -> dict[str, Any]:
    """`/stats` of a `persistent://` topic, asked of the cluster's first broker (the admin
    API redirects to the owner)."""
    local = topic.removeprefix("persistent://")
    return admin(cluster, "GET", f"/admin/v2/persistent/{local}/stats")  # type: ignore[no-any-return]


def replicator_connected(cluster: GeoCluster, topic: str, remote: str) -> bool:
    """Whether `cluster`'s replicator of `topic` to `remote` has its producer there."""
    return bool(topic_stats(cluster, topic)["replication"][remote]["connected"])


def wait_until(what: str, condition: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.2)
