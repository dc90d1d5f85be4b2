"""The official client against a real cluster of our brokers and bookie."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import pulsar
import pytest

from harness.targets.local.cluster import LocalCluster
from tests.cluster.helpers import backlog, drain, owner_of

pytestmark = pytest.mark.cluster

TOPIC = "persistent://public/default/through-redirect"


def test_ten_thousand_batched_messages_through_a_broker_that_does_not_own_the_topic(
        make_cluster: Callable[..., LocalCluster],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    cluster = make_cluster(brokers=3)
    owner = owner_of(cluster, TOPIC)
    entry_broker = next(b for b in cluster.brokers if b is not owner)
    client = pulsar_client(entry_broker.service_url)
    consumer = client.subscribe(TOPIC, "all", receiver_queue_size=2000)
    producer = client.create_producer(TOPIC, batching_enabled=True,
                                      batching_max_publish_delay_ms=5, block_if_queue_full=True)
    sent = [f"message-{n}".encode() for n in range(10_000)]
    for data in sent:
        producer.send_async(data, None)
    producer.flush()

    received = Counter(m.data() for m in drain(consumer))
    assert set(received) == set(sent), f"{len(set(sent) - set(received))} lost"
    assert max(received.values()) == 1, "duplicates without any fault"
    consumer.close()
    assert backlog(owner.admin_url, TOPIC, "all") == 0
