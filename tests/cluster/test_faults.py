"""Faults against real broker processes: a killed owner, a paused owner whose topic is
taken over (and its `no-fencing` twin), ZooKeeper session expiry under both PIP-57
policies, bytes that are not frames, and deduplication across an owner change (and its
`dedup-state-lost-on-owner-change` twin)."""

from __future__ import annotations

import threading
import time
import urllib.error
from collections.abc import Callable

import pulsar
import pytest

from harness.targets.local.cluster import BrokerNode, LocalCluster
from nemesis.session_expiry import expire_session
from tests.cluster.helpers import admin_get, drain, lookup_through, owner_of
from tests.cluster.raw_producer import JUNK, RawProducer, send_junk
from wire.pulsar_api_pb2 import BaseCommand

pytestmark = pytest.mark.cluster

SESSION_TIMEOUT = 4.0  # ClusterSettings' default, in seconds


def other_than(cluster: LocalCluster, broker: BrokerNode) -> BrokerNode:
    return next(b for b in cluster.brokers if b is not broker)


def test_killing_the_owner_mid_stream_loses_no_acknowledged_message(
        make_cluster: Callable[..., LocalCluster],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    cluster = make_cluster(brokers=2)
    topic = "persistent://public/default/killed-owner"
    owner = owner_of(cluster, topic)
    client = pulsar_client(other_than(cluster, owner).service_url)
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, batching_enabled=True,
                                      batching_max_publish_delay_ms=5, block_if_queue_full=True)
    acknowledged: set[bytes] = set()
    lock = threading.Lock()

    def produce() -> None:
        for n in range(3000):
            data = f"m-{n}".encode()

            def done(result: pulsar.Result, _id: object, data: bytes = data) -> None:
                if result == pulsar.Result.Ok:
                    with lock:
                        acknowledged.add(data)
            producer.send_async(data, done)
            if n == 1000:
                owner.kill()
            time.sleep(0.002)
        producer.flush()

    writer = threading.Thread(target=produce, daemon=True)
    writer.start()
    consumed = {m.data() for m in drain(consumer, idle_ms=8000, deadline=120)}
    writer.join(60)
    consumed |= {m.data() for m in drain(consumer, idle_ms=3000)}
    assert len(acknowledged) > 2000
    assert acknowledged <= consumed, f"{len(acknowledged - consumed)} acknowledged but lost"


@pytest.mark.parametrize("mutants", [(), ("no-fencing",)], ids=["fenced", "no-fencing"])
def test_a_paused_owner_acknowledges_no_write_after_a_takeover(
        make_cluster: Callable[..., LocalCluster],
        pulsar_client: Callable[..., pulsar.Client], mutants: tuple[str, ...]) -> None:
    cluster = make_cluster(brokers=2, mutants=mutants)
    topic = "persistent://public/default/paused-owner"
    old = owner_of(cluster, topic)
    new = other_than(cluster, old)
    raw = RawProducer(old.service_url, topic)
    raw.send(0, b"before")
    assert [c.type for c in raw.collect(2.0)] == [BaseCommand.SEND_RECEIPT]

    old.pause()
    for sequence in range(1, 6):
        raw.send(sequence, f"after-{sequence}".encode())  # waits in the paused broker's socket
    time.sleep(SESSION_TIMEOUT * 1.5 + 1)  # the server expires the old owner's session
    assert lookup_through(new, topic) == new.service_url  # the takeover
    client = pulsar_client(new.service_url)
    producer = client.create_producer(topic, batching_enabled=False)
    new_owner_write = producer.send(b"new owner")
    old.resume()

    replies = raw.collect(5.0)
    late = [c.send_receipt for c in replies if c.type == BaseCommand.SEND_RECEIPT]
    if not mutants:
        assert late == [], "the old owner acknowledged writes after the takeover"
        # It did try them: its ledger was fenced, so it closed the producer.
        assert BaseCommand.CLOSE_PRODUCER in [c.type for c in replies]
        return
    # no-fencing: the old owner acknowledges into a ledger the new owner has closed: the
    # receipts name positions no consumer on the new owner ever sees (a fork).
    assert late, "no-fencing: the paused owner should acknowledge its late writes"
    consumer = client.subscribe(topic, "check", initial_position=pulsar.InitialPosition.Earliest)
    seen = {m.data() for m in drain(consumer)}
    assert b"before" in seen and b"new owner" in seen
    forked = [r for r in late if f"after-{r.sequence_id}".encode() not in seen
              or (r.message_id.ledgerId, r.message_id.entryId) == (
                  new_owner_write.ledger_id(), new_owner_write.entry_id())]
    assert forked, f"late receipts {late} should be invisible on the new owner"


def session_of(broker: BrokerNode) -> dict[str, object] | None:
    """The broker's ZooKeeper session; None between sessions (the endpoint answers 503)."""
    try:
        return admin_get(broker.admin_url, "/admin/v2/debug/zookeeper-session")
    except urllib.error.HTTPError as exc:
        if exc.code == 503:
            return None
        raise


def expire(broker: BrokerNode) -> int:
    session = session_of(broker)
    assert session is not None
    expire_session(str(session["zookeeperServers"]), int(session["sessionId"]),  # type: ignore[arg-type]
                   bytes.fromhex(str(session["password"])))
    return int(session["sessionId"])  # type: ignore[arg-type]


def test_session_expiry_under_reconnect_keeps_the_bundle_nobody_took(
        make_cluster: Callable[..., LocalCluster],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    cluster = make_cluster(brokers=2, session_expired_policy="reconnect")
    topic = "persistent://public/default/expired-reconnect"
    owner = owner_of(cluster, topic)
    client = pulsar_client(owner.service_url)
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"before")
    expired = expire(owner)
    deadline = time.monotonic() + 30
    while not (owner.serving() and (session := session_of(owner)) is not None
               and session["sessionId"] != expired):
        assert time.monotonic() < deadline, "no new session within 30 s"
        time.sleep(0.2)
    producer.send(b"after")
    assert owner.running
    assert owner_of(cluster, topic, via=other_than(cluster, owner)) is owner
    assert [m.data() for m in drain(consumer)] == [b"before", b"after"]


def _expire_and_wait(owner: BrokerNode) -> int:
    expire(owner)
    return owner.process.wait(30)


def _stop(owner: BrokerNode) -> int | None:
    owner.stop()
    return owner.process.returncode


@pytest.mark.parametrize("policy, leave, exit_code", [
    # PIP-57 `shutdown`: the expired broker exits 1; its node went with the session.
    pytest.param("shutdown", _expire_and_wait, 1, id="expiry-under-shutdown"),
    # A clean stop releases the bundle rather than leaving it to expire: it moves at once.
    pytest.param("reconnect", _stop, 0, id="clean-stop"),
])
def test_an_owner_that_leaves_hands_its_topic_to_the_survivor(
        make_cluster: Callable[..., LocalCluster],
        pulsar_client: Callable[..., pulsar.Client], policy: str,
        leave: Callable[[BrokerNode], int | None], exit_code: int) -> None:
    cluster = make_cluster(brokers=2, session_expired_policy=policy)
    topic = f"persistent://public/default/leaves-{policy}"
    owner = owner_of(cluster, topic)
    survivor = other_than(cluster, owner)
    client = pulsar_client(survivor.service_url)
    consumer = client.subscribe(topic, "sub")
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"before")
    assert leave(owner) == exit_code
    assert owner_of(cluster, topic, via=survivor) is survivor
    producer.send(b"after")
    assert [m.data() for m in drain(consumer)] == [b"before", b"after"]


def test_junk_bytes_do_not_take_the_broker_down(
        make_cluster: Callable[..., LocalCluster],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    cluster = make_cluster(brokers=1)
    client = pulsar_client(cluster.service_urls[0])
    producer = client.create_producer("persistent://public/default/junk", batching_enabled=False)
    for junk in JUNK:
        assert send_junk(cluster.service_urls[0], junk) == b""
    producer.send(b"still served")
    assert cluster.brokers[0].running


@pytest.mark.parametrize("mutants, resends_stored", [
    pytest.param((), 0, id="contract"),
    pytest.param(("dedup-state-lost-on-owner-change",), 2,
                 id="mutant-dedup-state-lost-on-owner-change"),
])
def test_deduplication_state_moves_with_the_topic_to_the_survivor(
        make_cluster: Callable[..., LocalCluster],
        pulsar_client: Callable[..., pulsar.Client], mutants: tuple[str, ...],
        resends_stored: int) -> None:
    """Deduplication on for every topic, a snapshot every two entries: after the owner
    stops, the survivor rebuilds the map from the snapshot and the entry after it, so the
    producer's resends are answered as duplicates (message id -1:-1), not stored again."""
    cluster = make_cluster(brokers=2, mutants=mutants, broker_args=(
        "--broker-deduplication-enabled", "--deduplication-entries-interval", "2"))
    topic = "persistent://public/default/deduplicated-across-owners"
    owner = owner_of(cluster, topic)
    survivor = other_than(cluster, owner)
    producer = pulsar_client(survivor.service_url).create_producer(
        topic, producer_name="fixed", batching_enabled=False)
    for n in range(1, 4):
        producer.send(f"m{n}".encode(), sequence_id=n)
    owner.stop()
    resent = [producer.send(f"m{n}".encode(), sequence_id=n) for n in (2, 3)]
    stored = [m for m in resent if (m.ledger_id(), m.entry_id()) != (-1, -1)]
    assert len(stored) == resends_stored
