"""A remote cluster that goes away and comes back (its brokers stopped and restarted; a
WAN cut needs containers): the replicator retries until it is back and then delivers
everything, and PIP-33's snapshots stop while the remote is unreachable and resume after.
Also: replication follows the namespace policies as they change, and a namespace message
TTL lets a replicator skip what expired while the remote was away."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

import pulsar
import pytest

from harness.targets.local.cluster import LocalCluster
from tests.geo.geo_clusters import (
    NAMESPACE,
    admin,
    replicator_connected,
    topic_stats,
    wait_until,
)
from tests.geo.traffic import SteadyProducer, read_all

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def _topic() -> str:
    return f"persistent://{NAMESPACE}/t-{uuid.uuid4().hex[:8]}"


class _RemoteAway:
    """Clusters a and b, a replicated subscription and a steady producer in a; then b's
    broker stops. `while_away` holds a's topic stats a few seconds later."""

    def __init__(self, geo_clusters: Callable[..., list[LocalCluster]],
                 pulsar_client: Callable[..., pulsar.Client]) -> None:
        self.a, self.b = geo_clusters(["a", "b"])
        self.topic = _topic()
        client = pulsar_client(self.a.service_urls[0])
        self.consumer = client.subscribe(self.topic, "sub",
                                         replicate_subscription_state_enabled=True)
        self.producer = SteadyProducer(client, self.topic)
        wait_until("snapshots are taken", lambda: self.snapshots() >= 2)
        self.b.brokers[0].stop()
        wait_until("the replicator notices", lambda: not self.connected())
        time.sleep(1.5)  # a snapshot started just before may still have completed
        self.completed_when_lost = self.snapshots()
        time.sleep(3)
        self.while_away = self.stats()

    def stats(self) -> dict[str, Any]:
        return topic_stats(self.a, self.topic)

    def snapshots(self) -> int:
        return int(self.stats()["replicatedSubscriptionsController"]["completedSnapshots"])

    def connected(self) -> bool:
        return replicator_connected(self.a, self.topic, "b")

    def stop(self) -> list[str]:
        published = self.producer.stop()
        self.consumer.close()
        return published


def test_snapshots_stop_while_the_remote_is_away_and_everything_arrives_after(
        geo_clusters: Callable[..., list[LocalCluster]],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    scene = _RemoteAway(geo_clusters, pulsar_client)
    try:
        controller = scene.while_away["replicatedSubscriptionsController"]
        assert controller["completedSnapshots"] == scene.completed_when_lost
        assert controller["pendingSnapshots"] <= 1  # at most one asked before the loss
        replication = scene.while_away["replication"]["b"]
        assert replication["msgBacklog"] > 0
        assert replication["replicationDelayInSeconds"] > 0

        scene.b.brokers[0].start()
        scene.b.brokers[0].wait_serving(60)
        wait_until("the replicator is back", scene.connected)
        wait_until("snapshots resume", lambda: scene.snapshots() > scene.completed_when_lost)
    finally:
        published = scene.stop()
    wait_until("the backlog drains",
               lambda: scene.stats()["replication"]["b"]["msgBacklog"] == 0)
    received = read_all(pulsar_client(scene.b.service_urls[0]), scene.topic)
    assert set(published) <= set(received)


def test_replication_follows_policy_changes_and_skips_expired_messages(
        geo_clusters: Callable[..., list[LocalCluster]],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    a, b = geo_clusters(["a", "b"])
    topic = _topic()
    producer = pulsar_client(a.service_urls[0]).create_producer(topic)
    producer.send(b"replicated")
    wait_until("the first message reached b", lambda: topic_stats(a, topic)["replication"]
               .get("b", {}).get("msgOutCounter") == 1)

    admin(a, "POST", f"/admin/v2/namespaces/{NAMESPACE}/replication", ["a"])
    wait_until("replication to b stops", lambda: not topic_stats(a, topic)["replication"])
    producer.send(b"local-only")

    admin(a, "POST", f"/admin/v2/namespaces/{NAMESPACE}/messageTTL", 1)
    b.brokers[0].stop()
    admin(a, "POST", f"/admin/v2/namespaces/{NAMESPACE}/replication", ["a", "b"])
    wait_until("replication to b restarts", lambda: "b" in topic_stats(a, topic)["replication"])
    producer.send(b"expired")
    time.sleep(2)  # older than the TTL before b is back
    b.brokers[0].start()
    b.brokers[0].wait_serving(60)
    wait_until("the replicator is back",
               lambda: topic_stats(a, topic)["replication"]["b"]["connected"])
    producer.send(b"fresh")
    wait_until("the backlog drains", lambda: topic_stats(a, topic)["replication"]["b"]
               ["msgBacklog"] == 0)
    assert topic_stats(a, topic)["replication"]["b"]["msgExpired"] == 1
    assert read_all(pulsar_client(b.service_urls[0]), topic) == ["replicated", "fresh"]
