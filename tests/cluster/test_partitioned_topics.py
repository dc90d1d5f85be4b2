"""Partitioned topics end to end on a real two-broker cluster: the admin API stores the
count in ZooKeeper, the official client produces and consumes over the partitions (which
the two brokers share), and partitioned-stats gathers them from their owners."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pulsar
import pytest

from harness.targets.local.cluster import LocalCluster
from tests.cluster.helpers import admin_get, call_owner, drain, module_cluster

pytestmark = pytest.mark.cluster

NAMESPACE = "/admin/v2/persistent/public/default"


cluster = module_cluster("partitioned", brokers=2)


@pytest.fixture
def client(cluster: LocalCluster) -> Iterator[pulsar.Client]:
    connected = pulsar.Client(cluster.service_urls[0], operation_timeout_seconds=15,
                              logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    yield connected
    connected.close()


def call(cluster: LocalCluster, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    """The status and answer (JSON, None when empty) of the topic's owner."""
    answer = call_owner(cluster.brokers[0].admin_url, method, path, body)
    return answer.status, answer.json() if answer.body else None


def test_creating_a_partitioned_topic_follows_pulsars_rules(cluster: LocalCluster) -> None:
    path = f"{NAMESPACE}/rules/partitions"
    assert call(cluster, "PUT", path, 0)[0] == 406
    assert call(cluster, "PUT", path, 100_000)[0] == 406
    assert call(cluster, "PUT", path, "three")[0] == 400
    assert call(cluster, "PUT", path, 2)[0] == 204
    assert call(cluster, "PUT", path, 2)[0] == 409
    assert call(cluster, "GET", path) == (200, {"partitions": 2})
    assert call(cluster, "PUT", f"{NAMESPACE}/rules")[0] == 409  # the name is taken
    assert call(cluster, "PUT", f"{NAMESPACE}/plain")[0] == 204
    assert call(cluster, "PUT", f"{NAMESPACE}/plain/partitions", 2)[0] == 409
    assert call(cluster, "PUT", f"{NAMESPACE}/odd-partition-1/partitions", 2)[0] == 412
    assert call(cluster, "GET", f"{NAMESPACE}/never-made/partitions") == (200, {"partitions": 0})
    listed = admin_get(cluster.brokers[1].admin_url, NAMESPACE)
    assert {"persistent://public/default/rules-partition-0",
            "persistent://public/default/rules-partition-1"} <= set(listed)
    assert "persistent://public/default/rules" not in listed
    assert "persistent://public/default/rules" in admin_get(
        cluster.brokers[1].admin_url, f"{NAMESPACE}/partitioned")


def test_keyed_messages_spread_over_partitions_and_one_subscription_gets_them_all(
        cluster: LocalCluster, client: pulsar.Client) -> None:
    topic = "persistent://public/default/orders"
    assert call(cluster, "PUT", f"{NAMESPACE}/orders/partitions", 3)[0] == 204
    consumer = client.subscribe(topic, "all")
    producer = client.create_producer(topic, batching_enabled=False)
    sent = [f"order-{n}".encode() for n in range(60)]
    for n, data in enumerate(sent):
        producer.send(data, partition_key=f"customer-{n % 10}")
    assert sorted(m.data() for m in drain(consumer)) == sorted(sent)

    stats = admin_get(cluster.brokers[0].admin_url, f"{NAMESPACE}/orders/partitioned-stats")
    assert stats["metadata"] == {"partitions": 3} and stats["msgInCounter"] == 60
    written = [p["msgInCounter"] for p in stats["partitions"].values()]
    assert len(written) == 3 and sum(1 for count in written if count) > 1
    assert stats["subscriptions"]["all"]["msgBacklog"] == 0
    assert len(stats["subscriptions"]["all"]["consumers"]) == 3  # one per partition


def test_partitions_only_grow_and_deleting_removes_them(
        cluster: LocalCluster, client: pulsar.Client) -> None:
    path = f"{NAMESPACE}/growing/partitions"
    assert call(cluster, "PUT", path, 2)[0] == 204
    assert call(cluster, "POST", path, 2)[0] == 409
    assert call(cluster, "POST", path, 4)[0] == 204
    assert call(cluster, "GET", path) == (200, {"partitions": 4})
    producer = client.create_producer("persistent://public/default/growing",
                                      batching_enabled=False)
    for n in range(8):
        producer.send(f"{n}".encode(), partition_key=f"k{n}")

    assert call(cluster, "DELETE", path)[0] == 409  # a producer is connected
    producer.close()
    assert call(cluster, "DELETE", path)[0] == 204
    assert call(cluster, "GET", path) == (200, {"partitions": 0})
    assert not [t for t in admin_get(cluster.brokers[0].admin_url, NAMESPACE)
                if "growing" in t]
    assert call(cluster, "DELETE", path)[0] == 404
