"""Geo-replication between a run's clusters, set up as an operator does it, through each
cluster's admin REST API only: every cluster learns the others' URLs (every broker's, in
one multi-host `brokerServiceUrl`), and one namespace
exists in each with all of them as its replication clusters. Then the replicators copy
every message published in one cluster to all the others (docs/geo-replication.md)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from harness.admin_api import AdminError, admin_request
from harness.target import TargetCluster
from history.errors import EnvironmentProblem
from wire.connection import joined_service_url

LINK_TIMEOUT_S = 60.0


class LinkFailed(EnvironmentProblem):
    """A cluster refused the replication set-up until the deadline."""


def replicate_namespace(clusters: Sequence[TargetCluster], namespace: str) -> None:
    """Register every cluster in every cluster's metadata, then make `tenant/ns` in each,
    replicated to all; retried (the requests are idempotent) for `LINK_TIMEOUT_S`."""
    tenant = namespace.split("/")[0]
    names = [c.name for c in clusters]
    for cluster in clusters:
        for other in clusters:
            if other is not cluster:
                path = f"/admin/v2/clusters/{other.name}"
                # Every broker, so that the replicators reach the cluster while one of
                # its brokers is down; the admin URL stays one, as brokers redirect to it.
                urls = {"serviceUrl": other.admin_urls[0],
                        "brokerServiceUrl": joined_service_url(other.service_urls)}
                _put(cluster, path, urls, (path, urls))
        path = f"/admin/v2/tenants/{tenant}"
        _put(cluster, path, {"allowedClusters": names}, (path, {"allowedClusters": names}))
        _put(cluster, f"/admin/v2/namespaces/{namespace}", {"replication_clusters": names},
             (f"/admin/v2/namespaces/{namespace}/replication", names))


def _put(cluster: TargetCluster, path: str, body: Any, update: tuple[str, Any]) -> None:
    """Create with PUT; when it exists already (an earlier attempt whose answer was lost,
    or an earlier run on a Target that outlives runs, perhaps with other URLs), make it
    what this run needs with the POST `update` (path, body)."""
    deadline = time.monotonic() + LINK_TIMEOUT_S
    while True:
        try:
            try:
                admin_request(cluster.admin_urls[0], "PUT", path, body)
            except AdminError as exc:
                if exc.status != 409:
                    raise
                admin_request(cluster.admin_urls[0], "POST", *update)
            return
        except AdminError as exc:
            problem: Exception = exc
        except OSError as exc:
            problem = exc
        if time.monotonic() > deadline:
            raise LinkFailed(f"cluster {cluster.name} refused PUT {path} for "
                             f"{LINK_TIMEOUT_S:g} s: {problem}")
        time.sleep(0.5)
