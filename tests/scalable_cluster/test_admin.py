"""The Scalable Topics and Segments admin APIs on a real cluster: statuses a user sees,
deletion seen by every broker, and the grace-period broker flag."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest
import requests

from harness.scalable_client.stream_consumer import StreamConsumer
from harness.targets.local.cluster import LocalCluster
from tests.scalable_cluster.workload import Received, ScalableAdmin, wait_until

pytestmark = [pytest.mark.cluster]


def test_admin_answers_with_the_documented_statuses(
        make_cluster: Callable[..., LocalCluster]) -> None:
    cluster = make_cluster(brokers=2)
    first, second = (ScalableAdmin(url, "orders") for url in cluster.admin_urls)
    assert first.call("GET").status_code == 404
    created = first.ok("PUT", json={"numInitialSegments": 4})
    assert [s["hashRange"] for s in created["segments"].values()] == [
        {"start": 0, "end": 0x3FFF}, {"start": 0x4000, "end": 0x7FFF},
        {"start": 0x8000, "end": 0xBFFF}, {"start": 0xC000, "end": 0xFFFF}]
    assert first.call("PUT", json={"numInitialSegments": 2}).status_code == 409
    assert second.ok("GET", "/stats")["activeSegments"] == 4
    assert second.ok("POST", "/split/0")["epoch"] == 1  # redirected to the leader
    sealed = second.call("POST", "/split/0")
    assert (sealed.status_code, sealed.json()["reason"]) == (
        409, "segment 0 is SEALED, not ACTIVE")
    assert second.call("POST", "/merge/1/3").status_code == 412
    assert second.call("POST", "/split/99").status_code == 404
    assert second.call("DELETE", "/subscriptions/nobody").status_code == 404
    assert first.ok("POST", "/merge/4/5")["epoch"] == 2
    segments = f"{cluster.admin_urls[0]}/admin/v2/segments/public/default/orders"
    assert requests.get(f"{segments}/zzzz-0000-0", timeout=10).status_code == 400
    parent = requests.get(f"{segments}/0000-3fff-0", timeout=30)
    assert parent.status_code == 200 and parent.json()["terminated"] is True
    assert requests.get(f"{segments}/0000-3fff-77", timeout=30).status_code == 404
    assert first.listed() == ["topic://public/default/orders"]
    second.ok("PUT", "/subscriptions/billing")
    child = requests.get(f"{segments}/8000-bfff-2", timeout=30).json()
    assert child["subscriptions"]["billing"]["drained"] is False
    second.ok("DELETE", "/subscriptions/billing")
    assert second.ok("GET", "/stats")["subscriptions"] == {}
    assert requests.get(f"{segments}/8000-bfff-2", timeout=30).json()["subscriptions"] == {}

    first.ok("DELETE")
    # Every broker forgets it, including the one whose controller was only a candidate.
    deadline = time.monotonic() + 20
    while second.listed() or first.call("GET").status_code != 404:
        assert time.monotonic() < deadline, "the deleted topic is still listed"
        time.sleep(0.2)
    time.sleep(1.0)  # a candidate's late campaign must not bring the topic back
    assert second.listed() == []
    assert requests.get(f"{segments}/0000-3fff-0", timeout=30).status_code == 404


def test_the_grace_period_flag_decides_when_a_silent_consumer_is_evicted(
        make_cluster: Callable[..., LocalCluster]) -> None:
    cluster = make_cluster(brokers=1, broker_args=("--scalable-grace-period-seconds", "2"))
    admin = ScalableAdmin(cluster.admin_urls[0], "graceful")
    admin.ok("PUT", json={"numInitialSegments": 2})
    admin.ok("PUT", "/subscriptions/stream")

    async def scenario() -> None:
        urls = cluster.service_urls
        a = await StreamConsumer(urls, admin.topic, "stream", "a", Received()).start()
        b = await StreamConsumer(urls, admin.topic, "stream", "b", Received()).start()
        try:
            await wait_until(lambda: (a.assigned, b.assigned) == ((0,), (1,)), 10,
                             "one segment each")
            await a.close(unregister=False)  # a process that died: its session stays
            started = time.monotonic()
            await asyncio.sleep(1.0)
            assert b.assigned == (1,), "evicted before the grace period ended"
            await wait_until(lambda: b.assigned == (0, 1), 10, "the eviction")
            assert time.monotonic() - started < 10  # 2 s from the flag, not the default 60
        finally:
            await b.close()

    asyncio.run(asyncio.wait_for(scenario(), 60))
