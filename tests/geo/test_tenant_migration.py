"""Document 003's tenant migration, end to end: clients reach their tenant through the
lookup service; while they produce and consume, the tenant moves from cluster a to b by
the five steps of `harness/migration.py`. No message is lost, the clients end up in b,
and a no longer holds the tenant."""

from __future__ import annotations

import time
from collections.abc import Callable

import pulsar
import pytest

from harness.admin_api import admin_request
from harness.migration import ClusterEndpoint, MigrationPlan, migrate_tenant
from harness.targets.local.cluster import LocalCluster
from tests.geo.conftest import LookupService
from tests.geo.geo_clusters import NAMESPACE, TENANT, admin, topic_stats, wait_until
from tests.geo.traffic import AckingConsumer, SteadyProducer

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def _endpoint(cluster: LocalCluster) -> ClusterEndpoint:
    return ClusterEndpoint(cluster.settings.name, cluster.admin_urls[0],
                           cluster.service_urls[0])


def test_a_tenant_moves_to_another_cluster_while_clients_run(
        geo_clusters: Callable[..., list[LocalCluster]],
        lookup_service: Callable[[str], LookupService],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    a, b = geo_clusters(["a", "b"], linked=False,
                        broker_args=("--replicate-individually-deleted",))
    lookup = lookup_service(f"{a.zookeeper.connect_string}/lookup-service")
    for cluster in (a, b):
        admin_request(lookup.admin_url, "PUT", f"/lookup/v2/clusters/{cluster.settings.name}",
                      {"brokerServiceUrl": cluster.service_urls[0]})
    admin_request(lookup.admin_url, "PUT", f"/lookup/v2/tenants/{TENANT}", {"cluster": "a"})
    admin(a, "PUT", f"/admin/v2/tenants/{TENANT}", {"allowedClusters": ["a"]})
    admin(a, "PUT", f"/admin/v2/namespaces/{NAMESPACE}", {})

    topic = f"persistent://{NAMESPACE}/moving"
    client = pulsar_client(lookup.service_url)
    consumer = AckingConsumer(client.subscribe(topic, "sub",
                                               replicate_subscription_state_enabled=True))
    producer = SteadyProducer(client, topic)
    steps: list[str] = []
    try:
        time.sleep(2)
        migrate_tenant(MigrationPlan(TENANT, (NAMESPACE.split("/")[1],), _endpoint(a),
                                     _endpoint(b), lookup.admin_url, timeout=60),
                       on_step=steps.append)
        time.sleep(2)
        in_b = topic_stats(b, topic)
    finally:
        published = producer.stop()
    wait_until("the consumer has every message",
               lambda: set(published) <= set(consumer.received))
    received = consumer.stop()
    duplicates = len(received) - len(set(received))
    print(f"tenant migration a -> b: published {len(published)}, received {len(received)}, "
          f"duplicates {duplicates}, steps {steps}")

    assert steps == ["metadata", "data", "consumption progress", "switch", "clean up"]
    assert TENANT not in admin(a, "GET", "/admin/v2/tenants")
    assert admin_request(lookup.admin_url, "GET",
                         f"/lookup/v2/tenants/{TENANT}")["cluster"] == "b"
    # The clients themselves (not only replication) now work in b.
    assert [p for p in in_b["publishers"] if not p["producerName"].startswith("pulsar.repl.")]
    assert in_b["subscriptions"]["sub"]["consumers"]
