"""A `non-persistent://` topic on a real broker: the admin API reports its clients while it
is served, and refuses to partition it."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Callable

import pulsar
import pytest

from harness.targets.local.cluster import LocalCluster
from tests.cluster.helpers import admin_get, drain

pytestmark = pytest.mark.cluster

TOPIC = "non-persistent://public/default/pulse"
PATH = "/admin/v2/non-persistent/public/default/pulse"


def test_stats_answer_for_a_served_non_persistent_topic(
        make_cluster: Callable[..., LocalCluster],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    cluster = make_cluster(brokers=1)
    admin = cluster.brokers[0].admin_url
    with pytest.raises(urllib.error.HTTPError) as unknown:
        admin_get(admin, f"{PATH}/stats")
    assert unknown.value.code == 404

    client = pulsar_client(cluster.service_urls[0])
    consumer = client.subscribe(TOPIC, "watching", consumer_name="watcher")
    producer = client.create_producer(TOPIC, producer_name="beat", batching_enabled=False)
    for n in range(5):
        producer.send(f"{n}".encode())
    assert len(drain(consumer)) == 5

    stats = admin_get(admin, f"{PATH}/stats")
    assert stats["msgInCounter"] == 5
    assert [p["producerName"] for p in stats["publishers"]] == ["beat"]
    watching = stats["subscriptions"]["watching"]
    assert [c["consumerName"] for c in watching["consumers"]] == ["watcher"]
    assert watching["msgOutCounter"] == 5 and not watching["isDurable"]

    refused = urllib.request.Request(f"{admin}{PATH}/partitions", data=b"3", method="PUT",
                                     headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as partitioned:
        urllib.request.urlopen(refused, timeout=15)
    assert partitioned.value.code == 501
