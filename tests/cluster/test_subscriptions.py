"""Every subscription type with the official client over real storage, and
acknowledgements that survive the broker (they live in the cursor, not in memory)."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable

import pulsar
import pytest

from harness.targets.local.cluster import LocalCluster
from tests.cluster.helpers import backlog, drain

pytestmark = pytest.mark.cluster


def produce(client: pulsar.Client, topic: str, count: int, keys: int = 0,
            batching: bool = True) -> list[bytes]:
    producer = client.create_producer(topic, batching_enabled=batching and not keys,
                                      batching_max_publish_delay_ms=5, block_if_queue_full=True)
    sent = [f"{n}".encode() for n in range(count)]
    for n, data in enumerate(sent):
        producer.send_async(data, None, partition_key=f"key-{n % keys}" if keys else None)
    producer.flush()
    producer.close()
    return sent


def subscribe(client: pulsar.Client, topic: str, kind: pulsar.ConsumerType, count: int
              ) -> list[pulsar.Consumer]:
    return [client.subscribe(topic, "sub", consumer_type=kind, consumer_name=f"c{n}",
                             receiver_queue_size=50) for n in range(count)]


def test_each_subscription_type_delivers_as_its_type_promises(
        make_cluster: Callable[..., LocalCluster],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    cluster = make_cluster(brokers=1)
    client = pulsar_client(cluster.service_urls[0])

    topic = "persistent://public/default/exclusive"
    (only,) = subscribe(client, topic, pulsar.ConsumerType.Exclusive, 1)
    with pytest.raises(pulsar.ConsumerBusy):
        subscribe(client, topic, pulsar.ConsumerType.Exclusive, 1)
    sent = produce(client, topic, 500)
    assert [m.data() for m in drain(only)] == sent

    topic = "persistent://public/default/failover"
    first, second = subscribe(client, topic, pulsar.ConsumerType.Failover, 2)
    sent = produce(client, topic, 300)
    assert [m.data() for m in drain(first)] == sent and drain(second, idle_ms=500) == []
    first.close()
    more = produce(client, topic, 100)
    assert [m.data() for m in drain(second)] == more

    topic = "persistent://public/default/shared"
    consumers = subscribe(client, topic, pulsar.ConsumerType.Shared, 3)
    sent = produce(client, topic, 600, batching=False)  # one batch would go to one consumer
    shares = [[m.data() for m in drain(c, idle_ms=1500)] for c in consumers]
    assert all(shares) and sorted(functools.reduce(operator.iadd, shares, [])) == sorted(sent)

    topic = "persistent://public/default/key-shared"
    consumers = subscribe(client, topic, pulsar.ConsumerType.KeyShared, 3)
    produce(client, topic, 600, keys=20)
    owners: dict[str, set[int]] = {}
    for index, consumer in enumerate(consumers):
        per_key: dict[str, list[int]] = {}
        for message in drain(consumer, idle_ms=1500):
            per_key.setdefault(message.partition_key(), []).append(int(message.data()))
            owners.setdefault(message.partition_key(), set()).add(index)
        assert all(order == sorted(order) for order in per_key.values())
    assert len(owners) == 20 and all(len(o) == 1 for o in owners.values())
    assert backlog(cluster.admin_urls[0], topic, "sub") == 0


def test_nacks_redeliver_and_acknowledgements_survive_a_broker_restart(
        make_cluster: Callable[..., LocalCluster],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    cluster = make_cluster(brokers=1)
    client = pulsar_client(cluster.service_urls[0])
    topic = "persistent://public/default/acks"
    consumer = client.subscribe(topic, "sub", negative_ack_redelivery_delay_ms=200)
    sent = produce(client, topic, 100, batching=False)

    messages = [consumer.receive(timeout_millis=5000) for _ in sent]
    consumer.negative_acknowledge(messages[0])
    again = consumer.receive(timeout_millis=5000)
    assert again.data() == sent[0] and again.redelivery_count() == 1
    consumer.acknowledge_cumulative(messages[59])
    consumer.acknowledge(messages[80])
    consumer.close()
    assert backlog(cluster.admin_urls[0], topic, "sub") == 39

    cluster.brokers[0].restart()
    consumer = client.subscribe(topic, "sub")
    rest = [m.data() for m in drain(consumer)]
    assert rest == [d for n, d in enumerate(sent) if n >= 60 and n != 80]
