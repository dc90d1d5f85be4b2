"""The controller leader dies in the middle of a split: another broker's controller takes
over, rolls the split forward, and the stream consumers keep their sessions.

Deterministic pause point: the broker that owns the parent segment is stopped (SIGSTOP)
before the split, so the leader's first segment request (step 1) hangs on it; once the
pending change is in ZooKeeper the leader is SIGKILLed and the owner resumed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from urllib.parse import urlsplit

import pytest
import requests

from harness.scalable_client.producer import ScalableProducer
from harness.scalable_client.stream_consumer import StreamConsumer
from harness.targets.local.cluster import BrokerNode, LocalCluster
from impl.metadata import paths
from impl.metadata.store import MetadataStore
from tests.scalable_cluster.workload import (
    KeyedLoad,
    Received,
    ScalableAdmin,
    dual_writes,
    lost,
    out_of_order,
    undelivered,
    wait_until,
)

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

TOPIC = "failover"
PARENT = "segment://public/default/failover/0000-7fff-0"


def owner_of_parent(cluster: LocalCluster) -> BrokerNode:
    """The broker that owns (or is chosen for) the bundle of segment 0's topic."""
    url = f"{cluster.admin_urls[0]}/admin/v2/segments/public/default/{TOPIC}/0000-7fff-0"
    response = requests.get(url, allow_redirects=False, timeout=30)
    if response.status_code == 307:
        location = urlsplit(response.headers["Location"])
        return cluster.broker_at(f"{location.scheme}://{location.netloc}")
    return cluster.brokers[0]


EVERYTHING = ({0, 1}, {1, 2, 3})
"""What a consumer alone in the subscription is dealt, before and after the split (the
drained parent 0 gives way to its children 2 and 3)."""


@pytest.mark.parametrize("mutant, sessions_kept", [
    pytest.param(None, True, id="correct"),
    pytest.param("no-grace-period", False, id="no-grace-period"),
])
def test_leader_killed_mid_split_the_next_leader_rolls_it_forward(
        make_cluster: Callable[..., LocalCluster], mutant: str | None,
        sessions_kept: bool) -> None:
    cluster = make_cluster(brokers=3, mutants=(mutant,) if mutant else ())
    owner = owner_of_parent(cluster)
    leader, other = [b for b in cluster.brokers if b is not owner]
    admin = ScalableAdmin(leader.admin_url, TOPIC)
    admin.ok("PUT", json={"numInitialSegments": 2})  # the creating broker campaigns first
    admin.ok("PUT", "/subscriptions/stream")
    assert admin.ok("GET", "/stats")["controllerBrokerUrl"] == leader.service_url
    survivors = ScalableAdmin(other.admin_url, TOPIC)
    # Clients reach the cluster through the third broker first: its DAG sessions make it
    # a controller candidate.
    urls = [other.service_url, owner.service_url, leader.service_url]
    observer = MetadataStore.connect(cluster.zk_connect_string, session_timeout=10.0)
    pending = paths.scalable_topic_pending_change("public", "default", TOPIC)

    async def scenario() -> None:
        got_a, got_b = Received(), Received()
        producer = await ScalableProducer(urls, admin.topic).start()
        a = await StreamConsumer(urls, admin.topic, "stream", "a", got_a).start()
        b = await StreamConsumer(urls, admin.topic, "stream", "b", got_b).start()
        load = KeyedLoad(producer, keys=16)
        try:
            await load.run(40, 0.01)
            before = {"a": set(a.assigned), "b": set(b.assigned)}
            assert before == {"a": {0}, "b": {1}}
            owner.pause()
            try:
                split = asyncio.create_task(asyncio.to_thread(
                    admin.call, "POST", "/split/0", timeout=20))
                await wait_until(lambda: observer.exists(pending), 20, "the pending split")
                await asyncio.sleep(0.5)  # the leader now waits on the paused owner
                leader.kill()
            finally:
                owner.resume()
            try:
                await split
            except requests.RequestException:
                pass  # its broker died under it
            await load.run(40, 0.02)
            await wait_until(lambda: survivors.layout().epoch == 1, 60, "the rolled-forward split")
            await load.run(40, 0.01)
            await load.settled()
            assert not load.failed
            await wait_until(
                lambda: not lost(load.sends, got_a.merged(got_b)), 60, "every message delivered",
                lambda: f"{undelivered(load.sends, got_a.merged(got_b))}; assignments "
                        f"a {a.assignments}, b {b.assignments}; segment 1: "
                        f"{survivors.segment_state('8000-ffff-1')}")
            # Sessions kept through the failover: whoever re-registers first is dealt a
            # share, not everything, because the other's session is still there.
            await wait_until(lambda: len(a.registered) > 1 and len(b.registered) > 1, 30,
                             "re-registration with the new leader")
            dealt_everything = [set(c.registered[1]) in EVERYTHING for c in (a, b)]
            assert any(dealt_everything) is not sessions_kept
        finally:
            await producer.close()
            await a.close()
            await b.close()
        layout = survivors.layout()
        assert not layout.segment(0).is_active
        assert [s.segment_id for s in layout.active_segments] == [2, 3, 1]
        assert observer.exists(pending) is False
        controller = survivors.ok("GET", "/stats")["controllerBrokerUrl"]
        assert controller in (other.service_url, owner.service_url)
        assert out_of_order(load.sends, got_a) == []
        assert out_of_order(load.sends, got_b) == []
        assert dual_writes(load.sends, layout) == []

    try:
        asyncio.run(asyncio.wait_for(scenario(), 200))
    finally:
        observer.close()


def test_a_consumer_of_a_paused_leader_follows_the_controller_to_its_successor(
        make_cluster: Callable[..., LocalCluster]) -> None:
    """The leader is frozen past its ZooKeeper session and another broker takes the
    controller over; the stream consumer's connection to the old leader survives the
    pause. Its drain reports there reach no controller, so the old leader must send it to
    the new one, or the stream stops at the first sealed segment."""
    cluster = make_cluster(brokers=3)
    leader, other, third = cluster.brokers
    admin = ScalableAdmin(leader.admin_url, TOPIC)
    admin.ok("PUT", json={"numInitialSegments": 1})
    admin.ok("PUT", "/subscriptions/stream")
    survivors = ScalableAdmin(other.admin_url, TOPIC)
    # Clients reach the cluster through the other brokers first: their DAG sessions make
    # those brokers controller candidates while the leader is frozen.
    urls = [other.service_url, third.service_url, leader.service_url]

    async def scenario() -> None:
        got = Received()
        producer = await ScalableProducer(urls, admin.topic).start()
        consumer = await StreamConsumer(urls, admin.topic, "stream", "a", got).start()
        load = KeyedLoad(producer, keys=8)
        try:
            assert consumer.dag.controller_url == leader.service_url
            await load.run(20, 0.01)
            leader.pause()
            try:
                await wait_until(
                    lambda: survivors.ok("GET", "/stats")["controllerBrokerUrl"]
                    not in (None, leader.service_url), 60, "a new controller leader")
            finally:
                leader.resume()
            await asyncio.to_thread(survivors.ok, "POST", "/split/0")
            await load.run(20, 0.01)
            await load.settled()
            assert not load.failed
            await wait_until(lambda: not lost(load.sends, got), 60, "every message delivered",
                             lambda: f"{undelivered(load.sends, got)}; assignments "
                                     f"{consumer.assignments}")
        finally:
            await producer.close()
            await consumer.close()
        assert set(consumer.assigned) == {1, 2}
        assert out_of_order(load.sends, got) == []

    asyncio.run(asyncio.wait_for(scenario(), 150))
