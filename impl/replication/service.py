"""A broker's geo-replication: one `BrokerReplication` per broker process, which gives each
loaded topic its `TopicReplication` and reads what those need from this cluster's
metadata: the namespace policies (replication clusters, message TTL; watched, so a change
starts and stops replicators at once) and the remote clusters' `brokerServiceUrl` (as in
Pulsar, each cluster's metadata must list the others: `PUT /admin/v2/clusters/{name}`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

from impl.metadata import paths
from impl.metadata.store import Node, Watch
from impl.mutants import NONE, Mutants
from impl.naming.topic_name import TopicName
from impl.replication.config import GeoReplicationConfig
from impl.replication.topic_replication import TopicReplication
from impl.resources import NamespacePolicies, PulsarResources, ResourceNotFound
from impl.storage.api import ManagedLedger


class BrokerReplication:
    def __init__(self, local_cluster: str, resources: PulsarResources,
                 config: GeoReplicationConfig = GeoReplicationConfig(),
                 mutants: Mutants = NONE, client_token: str | None = None) -> None:
        self.local_cluster = local_cluster
        self.config = config
        self.mutants = mutants
        self.client_token = client_token
        """What replicators present to the remote clusters (docs/security.md)."""
        self._resources = resources

    def for_topic(self, name: TopicName, ledger: ManagedLedger) -> TopicReplication:
        """Replication of a topic just loaded; await its `ready()` before serving writes."""
        return TopicReplication(name, ledger, self)

    async def policies(self, topic: TopicName) -> NamespacePolicies:
        return await asyncio.to_thread(self._resources.policies, topic.namespace_name)

    async def broker_service_url(self, cluster: str) -> str:
        """The cluster's `brokerServiceUrl` as this cluster's metadata knows it; empty
        when the cluster is not registered here."""
        try:
            data = await asyncio.to_thread(self._resources.cluster, cluster)
        except ResourceNotFound:
            return ""
        return data.broker_service_url

    def watch_policies(self, topic: TopicName,
                       changed: Callable[[NamespacePolicies | None], None]) -> Watch:
        """Call `changed` on the event loop with the namespace's policies after every change
        (None while the namespace does not exist)."""
        loop = asyncio.get_running_loop()
        namespace = topic.namespace_name
        path = paths.namespace_policies(namespace.tenant, namespace.namespace)

        def on_change(node: Node | None) -> None:
            policies = (None if node is None
                        else NamespacePolicies.from_json(json.loads(node.data or b"{}")))
            loop.call_soon_threadsafe(changed, policies)

        return self._resources.store.watch_data(path, on_change)
