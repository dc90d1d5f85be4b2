"""The failover scene every geo test plays: producers publish at a steady pace in one or
more clusters, a consumer with a replicated subscription consumes and acknowledges in the
source cluster and then stops; a new consumer on the same subscription in the target
cluster reads on. What a user notices is what the scene measures: messages never delivered
again after the failover (lost) and messages delivered again although acknowledged
(duplicates)."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import pulsar

from tests.geo.geo_clusters import NAMESPACE, GeoCluster, cluster_name, topic_stats, wait_until

SUBSCRIPTION = "geo-sub"


class TrafficFault(Protocol):
    """A fault the scene plays while its traffic runs (tests/geo_docker: a WAN cut, one
    stalled replication link)."""

    def inject(self) -> None:
        """Runs in a thread of its own beside the producers and the source consumer; what
        it raises fails the scene."""

    def heal(self) -> None:
        """Called once the traffic is over, before the clusters are left to settle: keep
        what the test judges, then lift the fault."""

    def lift(self) -> None:
        """Undo the fault, whatever state the scene is in; `play` calls it last, also when
        the scene fails, so no cut outlives its test."""


@dataclass
class Scene:
    source: GeoCluster
    target: GeoCluster
    producers: Sequence[GeoCluster]
    messages_per_producer: int = 300
    rate: float = 100.0
    """Messages per second of each producer."""
    acknowledge: int = 180
    """The source consumer stops after acknowledging this many messages."""
    hole: str | None = None
    """A message the source consumer never acknowledges (003's delayed message)."""
    consumer_lag_s: float = 0.0
    """The source consumer starts this late and then acknowledges at the producers' pace,
    so it always reads snapshots ahead of its acknowledgements."""
    snapshot_interval_s: float = 1.0
    fault: TrafficFault | None = None
    topic: str = field(default_factory=lambda: f"persistent://{NAMESPACE}/t-{uuid.uuid4().hex[:8]}")


@dataclass
class Outcome:
    published: set[str]
    acknowledged: dict[str, int]
    """Acknowledged in the source: message -> its publish time (ms)."""
    received_after_failover: list[str]

    @property
    def lost(self) -> set[str]:
        return self.published - set(self.acknowledged) - set(self.received_after_failover)

    @property
    def duplicates(self) -> set[str]:
        return set(self.received_after_failover) & set(self.acknowledged)

    def duplicate_span_s(self) -> float:
        """How far back before the last acknowledged message the oldest duplicate was
        published: PIP-33 promises about one snapshot interval (plus replication lag)."""
        if not self.duplicates:
            return 0.0
        last = max(self.acknowledged.values())
        return (last - min(self.acknowledged[m] for m in self.duplicates)) / 1000


def _publish(client: pulsar.Client, scene: Scene, cluster: GeoCluster,
             published: set[str], lock: threading.Lock) -> None:
    producer = client.create_producer(scene.topic)
    name = cluster_name(cluster)
    start = time.monotonic()
    for i in range(scene.messages_per_producer):
        delay = start + i / scene.rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        key = f"{name}-{i}"
        producer.send(key.encode())
        with lock:
            published.add(key)
    producer.close()


def _consume_source(consumer: pulsar.Consumer, scene: Scene, acknowledged: dict[str, int],
                    seen: list[str]) -> None:
    time.sleep(scene.consumer_lag_s)
    start = time.monotonic()
    deadline = start + 60
    while len(acknowledged) < scene.acknowledge and time.monotonic() < deadline:
        if scene.consumer_lag_s:
            time.sleep(max(0.0, start + len(acknowledged) / scene.rate - time.monotonic()))
        message = consumer.receive(timeout_millis=10_000)
        key = message.data().decode()
        seen.append(key)
        if key != scene.hole:
            consumer.acknowledge(message)
            acknowledged[key] = message.publish_timestamp()


def _inject(fault: TrafficFault, errors: list[BaseException]) -> None:
    try:
        fault.inject()
    except BaseException as exc:  # raised again by play, in the test's thread
        errors.append(exc)


def _stable(read: Callable[[], object], period: float, timeout: float) -> None:
    """Wait until `read()` gives the same answer twice `period` apart."""
    deadline = time.monotonic() + timeout
    last = read()
    while time.monotonic() < deadline:
        time.sleep(period)
        now = read()
        if now == last:
            return
        last = now
    raise AssertionError(f"still changing after {timeout} s: {last}")


def play(scene: Scene, client: Callable[[str], pulsar.Client],
         clusters: Sequence[GeoCluster]) -> Outcome:
    try:
        return _play(scene, client, clusters)
    finally:
        if scene.fault is not None:
            scene.fault.lift()


def _play(scene: Scene, client: Callable[[str], pulsar.Client],
          clusters: Sequence[GeoCluster]) -> Outcome:
    clients = {cluster_name(c): client(c.service_urls[0]) for c in clusters}
    source = clients[cluster_name(scene.source)]
    consumer = source.subscribe(scene.topic, SUBSCRIPTION,
                                replicate_subscription_state_enabled=True,
                                initial_position=pulsar.InitialPosition.Earliest)
    published: set[str] = set()
    acknowledged: dict[str, int] = {}
    seen: list[str] = []
    lock = threading.Lock()
    threads = [threading.Thread(target=_publish, args=(clients[cluster_name(p)], scene, p,
                                                       published, lock))
               for p in scene.producers]
    threads.append(threading.Thread(target=_consume_source,
                                    args=(consumer, scene, acknowledged, seen)))
    fault_errors: list[BaseException] = []
    if scene.fault is not None:
        threads.append(threading.Thread(target=_inject, args=(scene.fault, fault_errors)))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    if scene.fault is not None:
        scene.fault.heal()
    if fault_errors:
        raise fault_errors[0]
    assert len(acknowledged) == scene.acknowledge, "the source consumer stalled"
    total = len(scene.producers) * scene.messages_per_producer
    assert len(published) == total

    # Everything replicated everywhere, and the last updates applied in the target.
    for cluster in clusters:
        wait_until(f"{cluster_name(cluster)} replicated everything", lambda c=cluster: all(
            r["msgBacklog"] == 0 for r in topic_stats(c, scene.topic)["replication"].values()))

    def target_position() -> object:
        subscription = topic_stats(scene.target, scene.topic)["subscriptions"].get(SUBSCRIPTION)
        return subscription and subscription["markDeletePosition"]

    # An update marker travels behind the replicated backlog: allow a loaded machine time.
    wait_until("the target cluster has the subscription", lambda: bool(target_position()),
               timeout=60)
    time.sleep(2.5 * scene.snapshot_interval_s)  # the last updates, sent on the next ticks
    _stable(target_position, scene.snapshot_interval_s * 1.5, 30)
    consumer.close()

    failed_over = clients[cluster_name(scene.target)].subscribe(
        scene.topic, SUBSCRIPTION, replicate_subscription_state_enabled=True)
    received: list[str] = []
    expected = published - set(acknowledged)
    silent = 0  # everything was replicated before the failover: 6 s of silence is the end
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and silent < 2:
        try:
            message = failed_over.receive(timeout_millis=3000)
        except pulsar.Timeout:
            silent = 2 if expected <= set(received) else silent + 1
            continue
        silent = 0
        received.append(message.data().decode())
        failed_over.acknowledge(message)
    failed_over.close()
    # Markers are broker business: consumers see published messages only.
    assert set(seen) <= published and set(received) <= published
    return Outcome(published, acknowledged, received)


def report(label: str, outcome: Outcome) -> None:
    """The measured figures, printed for the test log (`pytest -s` shows them)."""
    print(f"{label}: published {len(outcome.published)}, acknowledged in the source "
          f"{len(outcome.acknowledged)}, received after failover "
          f"{len(outcome.received_after_failover)}, lost {len(outcome.lost)}, duplicates "
          f"{len(outcome.duplicates)} (oldest {outcome.duplicate_span_s():.2f} s before the "
          f"last acknowledgement)")
