"""Which cluster serves which tenant, and where each cluster's brokers are: the lookup
service's only state, kept in its metadata store so that every lookup-service process
answers the same and a switch is one write."""

from __future__ import annotations

import json
from dataclasses import dataclass

from impl.metadata import paths
from impl.metadata.errors import AlreadyExists, NotFound
from impl.metadata.store import MetadataStore


class UnknownTenant(LookupError):
    def __init__(self, tenant: str) -> None:
        super().__init__(f"the lookup service knows no cluster for tenant {tenant}")
        self.tenant = tenant


class UnknownCluster(LookupError):
    def __init__(self, cluster: str) -> None:
        super().__init__(f"the lookup service knows no cluster {cluster}")
        self.cluster = cluster


class TenantMoving(LookupError):
    """The tenant's clients wait while its last writes reach the cluster it moves to."""

    def __init__(self, tenant: str, cluster: str) -> None:
        super().__init__(f"tenant {tenant} is moving to cluster {cluster}; try again")
        self.tenant = tenant


@dataclass(frozen=True)
class ClusterRecord:
    name: str
    broker_service_url: str
    admin_url: str
    """Its admin API (`serviceUrl`); empty when it was registered without one, which only a
    migration needs."""


class TenantDirectory:
    """Blocking calls (ZooKeeper); asyncio callers run them in a thread."""

    def __init__(self, store: MetadataStore) -> None:
        self.store = store

    def set_cluster(self, name: str, broker_service_url: str, admin_url: str = "") -> None:
        record = {"brokerServiceUrl": broker_service_url}
        if admin_url:
            record["serviceUrl"] = admin_url
        self._put(paths.lookup_cluster(name), record)

    def cluster(self, name: str) -> ClusterRecord:
        try:
            data = json.loads(self.store.get(paths.lookup_cluster(name)).data)
        except NotFound:
            raise UnknownCluster(name) from None
        return ClusterRecord(name, str(data["brokerServiceUrl"]), str(data.get("serviceUrl", "")))

    def broker_service_url(self, cluster: str) -> str:
        return self.cluster(cluster).broker_service_url

    def assign(self, tenant: str, cluster: str) -> None:
        """From now on, lookups of the tenant's topics go to `cluster` (migration step 4),
        and none waits any more (`hold`)."""
        self.broker_service_url(cluster)  # refuse a cluster nobody can reach
        self._put(paths.lookup_tenant(tenant), {"cluster": cluster})

    def hold(self, tenant: str, moving_to: str) -> None:
        """Until the next `assign`, lookups of the tenant's topics are answered "not ready"
        (clients retry), so none reaches either cluster while the switch is made."""
        self._put(paths.lookup_tenant(tenant),
                  {"cluster": self.cluster_of(tenant), "movingTo": moving_to})

    def cluster_of(self, tenant: str) -> str:
        return str(self._record(tenant)["cluster"])

    def route(self, tenant: str) -> str:
        """The `brokerServiceUrl` of the cluster serving `tenant`."""
        record = self._record(tenant)
        if "movingTo" in record:
            raise TenantMoving(tenant, str(record["movingTo"]))
        return self.broker_service_url(str(record["cluster"]))

    def _record(self, tenant: str) -> dict[str, object]:
        try:
            data = self.store.get(paths.lookup_tenant(tenant)).data
        except NotFound:
            raise UnknownTenant(tenant) from None
        record: dict[str, object] = json.loads(data)
        return record

    def _put(self, path: str, value: dict[str, str]) -> None:
        data = json.dumps(value, sort_keys=True).encode()
        try:
            self.store.create(path, data)
        except AlreadyExists:
            self.store.set(path, data, -1)
