"""Readers and SEEK over real storage: a reader's subscription is never persisted and is
gone from the topic's stats once the reader closes; a SEEK moves the persisted
mark-delete position, by message id or by publish time."""

from __future__ import annotations

import time
from collections.abc import Callable

import pulsar
import pytest

from harness.targets.local.cluster import LocalCluster
from tests.cluster.helpers import admin_get, drain

pytestmark = pytest.mark.cluster

TOPIC = "persistent://public/default/read-and-seek"
STATS = "/admin/v2/persistent/public/default/read-and-seek/stats"


def produce(client: pulsar.Client, count: int, first: int = 0) -> list[pulsar.MessageId]:
    producer = client.create_producer(TOPIC, batching_enabled=False)
    ids = [producer.send(f"m{n}".encode()) for n in range(first, first + count)]
    producer.close()
    return ids


def test_a_reader_reads_from_its_start_and_leaves_no_subscription(
        make_cluster: Callable[..., LocalCluster],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    cluster = make_cluster(brokers=1)
    client = pulsar_client(cluster.service_urls[0])
    admin = cluster.brokers[0].admin_url
    ids = produce(client, 5)

    reader = client.create_reader(TOPIC, ids[1])
    got = []
    while reader.has_message_available():
        got.append(reader.read_next(5000).data())
    assert got == [b"m2", b"m3", b"m4"]
    (open_sub,) = admin_get(admin, STATS)["subscriptions"].values()
    assert open_sub["isDurable"] is False
    reader.close()
    assert admin_get(admin, STATS)["subscriptions"] == {}


def test_seek_persists_the_new_position_by_message_id_and_by_publish_time(
        make_cluster: Callable[..., LocalCluster],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    cluster = make_cluster(brokers=1)
    client = pulsar_client(cluster.service_urls[0])
    admin = cluster.brokers[0].admin_url
    ids = produce(client, 3)
    time.sleep(0.05)
    boundary = int(time.time() * 1000)
    time.sleep(0.05)
    produce(client, 3, first=3)

    consumer = client.subscribe(TOPIC, "sub", initial_position=pulsar.InitialPosition.Earliest,
                                start_message_id_inclusive=True)
    assert len(drain(consumer, idle_ms=1000)) == 6
    consumer.seek(ids[1])
    sub = admin_get(admin, STATS)["subscriptions"]["sub"]
    assert sub["msgBacklog"] == 5
    assert sub["markDeletePosition"] == f"{ids[0].ledger_id()}:{ids[0].entry_id()}"
    assert [m.data() for m in drain(consumer, idle_ms=1000)] == [
        f"m{n}".encode() for n in range(1, 6)]

    consumer.seek(boundary)
    assert admin_get(admin, STATS)["subscriptions"]["sub"]["msgBacklog"] == 3
    assert [m.data() for m in drain(consumer, idle_ms=1000)] == [b"m3", b"m4", b"m5"]
