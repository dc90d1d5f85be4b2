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
        """From now on, lookups of the tenant's topics go to `cluster` (migration step 4)."""
        self.broker_service_url(cluster)  # refuse a cluster nobody can reach
        self._put(paths.lookup_tenant(tenant), {"cluster": cluster})

    def cluster_of(self, tenant: str) -> str:
        try:
            data = self.store.get(paths.lookup_tenant(tenant)).data
        except NotFound:
            raise UnknownTenant(tenant) from None
        return str(json.loads(data)["cluster"])

    def route(self, tenant: str) -> str:
        """The `brokerServiceUrl` of the cluster serving `tenant`."""
        return self.broker_service_url(self.cluster_of(tenant))

    def _put(self, path: str, value: dict[str, str]) -> None:
        data = json.dumps(value, sort_keys=True).encode()
        try:
            self.store.create(path, data)
        except AlreadyExists:
            self.store.set(path, data, -1)
