"""Document 003's tenant migration, end to end: clients reach their tenant through the
lookup service; while they produce and consume, the lookup service moves the tenant from
cluster a to b by the five steps (impl/lookup/migration.py). No message is lost, the
clients end up in b, and a no longer holds the tenant."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pulsar
import pytest

from harness.admin_api import admin_request
from harness.targets.local.cluster import LocalCluster
from harness.targets.lookup import LookupService
from tests.geo.geo_clusters import NAMESPACE, TENANT, admin, topic_stats, wait_until
from tests.geo.traffic import AckingConsumer, SteadyProducer

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def _migrate(lookup: LookupService, tenant: str, target: str) -> dict[str, Any]:
    """Ask the lookup service to move `tenant`; its report once the migration ended."""
    path = f"/lookup/v2/tenants/{tenant}/migration"
    report = admin_request(lookup.admin_url, "POST", path,
                           {"cluster": target, "timeoutSeconds": 60})
    deadline = time.monotonic() + 5 * 60
    while report["state"] == "running" and time.monotonic() < deadline:
        time.sleep(0.2)
        report = admin_request(lookup.admin_url, "GET", path)
    return report  # type: ignore[no-any-return]


def test_a_tenant_moves_to_another_cluster_while_clients_run(
        geo_clusters: Callable[..., list[LocalCluster]],
        lookup_service: Callable[[str], LookupService],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    a, b = geo_clusters(["a", "b"], linked=False,
                        broker_args=("--replicate-individually-deleted",))
    lookup = lookup_service(f"{a.zookeeper.connect_string}/lookup-service")
    for cluster in (a, b):
        admin_request(lookup.admin_url, "PUT", f"/lookup/v2/clusters/{cluster.settings.name}",
                      {"brokerServiceUrl": cluster.service_urls[0],
                       "serviceUrl": cluster.admin_urls[0]})
    admin_request(lookup.admin_url, "PUT", f"/lookup/v2/tenants/{TENANT}", {"cluster": "a"})
    admin(a, "PUT", f"/admin/v2/tenants/{TENANT}", {"allowedClusters": ["a"]})
    admin(a, "PUT", f"/admin/v2/namespaces/{NAMESPACE}", {})

    topic = f"persistent://{NAMESPACE}/moving"
    client = pulsar_client(lookup.service_url)
    consumer = AckingConsumer(client.subscribe(topic, "sub",
                                               replicate_subscription_state_enabled=True))
    producer = SteadyProducer(client, topic)
    try:
        time.sleep(2)
        report = _migrate(lookup, TENANT, "b")
        time.sleep(2)
        in_b = topic_stats(b, topic)
    finally:
        published = producer.stop()
    wait_until("the consumer has every message",
               lambda: set(published) <= set(consumer.received))
    received = consumer.stop()
    duplicates = len(received) - len(set(received))
    steps = [(step["step"], step["state"]) for step in report["steps"]]
    print(f"tenant migration a -> b: published {len(published)}, received {len(received)}, "
          f"duplicates {duplicates}, steps {steps}")

    assert report["state"] == "done", report
    assert [name for name, _ in steps] == [
        "metadata", "data", "consumption progress", "switch", "clean up"]
    assert TENANT not in admin(a, "GET", "/admin/v2/tenants")
    assert admin_request(lookup.admin_url, "GET",
                         f"/lookup/v2/tenants/{TENANT}")["cluster"] == "b"
    # The clients themselves (not only replication) now work in b.
    assert [p for p in in_b["publishers"] if not p["producerName"].startswith("pulsar.repl.")]
    assert in_b["subscriptions"]["sub"]["consumers"]
