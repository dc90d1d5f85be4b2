"""Split and merge on a real cluster while a producer and both consumer kinds run: nothing
lost, no key out of order for the stream consumer, no parent write after a child's."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import pytest

from harness.scalable_client.errors import SegmentTerminated
from harness.scalable_client.producer import ScalableProducer, SendResult
from harness.scalable_client.queue_consumer import QueueConsumer
from harness.scalable_client.segment_producer import SegmentProducer
from harness.scalable_client.stream_consumer import StreamConsumer
from harness.targets.local.cluster import LocalCluster
from impl.scalable.hashing import key_hash
from tests.scalable_cluster.workload import (
    KeyedLoad,
    Received,
    ScalableAdmin,
    Send,
    dual_writes,
    lost,
    out_of_order,
    undelivered,
    wait_until,
)
from wire.connection import ConnectionPool

pytestmark = [pytest.mark.cluster]


def test_split_and_merge_under_load_lose_nothing_and_keep_key_order(
        make_cluster: Callable[..., LocalCluster]) -> None:
    cluster = make_cluster(brokers=3)
    urls = cluster.service_urls
    admin = ScalableAdmin(cluster.admin_urls[0], "orders")
    admin.ok("PUT", json={"numInitialSegments": 2})
    admin.ok("PUT", "/subscriptions/stream")
    admin.ok("PUT", "/subscriptions/queue")

    async def scenario() -> None:
        stream_a, stream_b, queue = Received(), Received(), Received()
        producer = await ScalableProducer(urls[1:] + urls[:1], admin.topic).start()
        consumers = [
            await StreamConsumer(urls[2:] + urls[:2], admin.topic, "stream", "a",
                                 stream_a).start(),
            await StreamConsumer(urls, admin.topic, "stream", "b", stream_b).start(),
            await QueueConsumer(urls[1:] + urls[:1], admin.topic, "queue", "q", queue).start(),
        ]
        load = KeyedLoad(producer, keys=24)
        try:
            await load.run(80, 0.01)
            # Split and merge on brokers other than the one the topic was created on: the
            # service redirects to the controller leader.
            split = await asyncio.to_thread(ScalableAdmin(cluster.admin_urls[1], "orders").ok,
                                            "POST", "/split/0")
            assert split["epoch"] == 1
            await load.run(80, 0.01)
            await asyncio.to_thread(admin.ok, "POST", "/split/1")
            await load.run(80, 0.01)
            merged = await asyncio.to_thread(ScalableAdmin(cluster.admin_urls[2], "orders").ok,
                                             "POST", "/merge/2/3")
            assert merged["epoch"] == 3
            await load.run(80, 0.01)
            await load.settled()
            assert not load.failed
            await wait_until(
                lambda: not lost(load.sends, stream_a.merged(stream_b))
                and not lost(load.sends, queue), 60, "every message delivered",
                lambda: f"stream: {undelivered(load.sends, stream_a.merged(stream_b))}; "
                        f"queue: {undelivered(load.sends, queue)}")
        finally:
            await producer.close()
            for consumer in consumers:
                await consumer.close()
        layout = admin.layout()
        assert [s.segment_id for s in layout.active_segments] == [6, 4, 5]
        assert {s.result.segment_id for s in load.sends} == set(range(7))
        assert out_of_order(load.sends, stream_a) == []
        assert out_of_order(load.sends, stream_b) == []
        assert dual_writes(load.sends, layout) == []

    asyncio.run(asyncio.wait_for(scenario(), 150))


@pytest.mark.parametrize("mutant, parent_accepts", [
    pytest.param(None, False, id="correct"),
    pytest.param("skip-terminate", True, id="skip-terminate"),
])
def test_a_parent_refuses_writes_once_a_child_took_one(
        make_cluster: Callable[..., LocalCluster], mutant: str | None,
        parent_accepts: bool) -> None:
    """A producer that has not heard of the split yet still writes to the parent: the
    parent must answer TopicTerminated (PIP-468 step 3), or a checker sees a dual write."""
    cluster = make_cluster(brokers=1, mutants=(mutant,) if mutant else ())
    admin = ScalableAdmin(cluster.admin_urls[0], "stale")
    admin.ok("PUT", json={"numInitialSegments": 1})
    key = next(f"k{i}" for i in range(100) if key_hash(f"k{i}") < 0x8000)

    async def scenario() -> list[str]:
        pool = ConnectionPool(cluster.service_urls)
        parent = admin.layout().segment(0)
        parent_topic = "segment://public/default/stale/0000-ffff-0"
        stale = SegmentProducer(pool, parent_topic, "stale", timeout=20)
        fresh = await ScalableProducer(cluster.service_urls, admin.topic).start()
        sends: list[Send] = []

        async def record(value: str, segment_id: int, send: object) -> None:
            invoked = time.monotonic()
            position = await send  # type: ignore[misc]
            result = position if isinstance(position, SendResult) else SendResult(
                segment_id, parent_topic, position)
            sends.append(Send(key, value, invoked, time.monotonic(), result))
        try:
            await record("before", parent.segment_id, stale.send(key, b"before"))
            await asyncio.to_thread(admin.ok, "POST", "/split/0")
            await fresh.dag.wait_for(lambda d: d.layout is not None and d.layout.epoch == 1)
            await record("child", -1, fresh.send(key, b"child"))
            try:
                await record("late", parent.segment_id, stale.send(key, b"late"))
            except SegmentTerminated:
                pass
        finally:
            stale.close()
            await fresh.close()
            pool.close()
        return dual_writes(sends, admin.layout())

    found = asyncio.run(asyncio.wait_for(scenario(), 60))
    assert found == (["late"] if parent_accepts else [])


@pytest.mark.parametrize("mutant", [None, "child-cursor-at-latest"])
def test_messages_a_child_takes_before_its_reader_attaches_are_kept(
        make_cluster: Callable[..., LocalCluster], mutant: str | None) -> None:
    """PIP-468 step 2: the children's cursors exist, at Earliest, before producers move to
    them. A stream reader that attaches only after the split (it reads a child once the
    parent is drained) must still get what the children took in between."""
    cluster = make_cluster(brokers=1, mutants=(mutant,) if mutant else ())
    admin = ScalableAdmin(cluster.admin_urls[0], "early")
    admin.ok("PUT", json={"numInitialSegments": 1})
    admin.ok("PUT", "/subscriptions/stream")

    async def scenario() -> tuple[list[str], list[str]]:
        producer = await ScalableProducer(cluster.service_urls, admin.topic).start()
        load = KeyedLoad(producer, keys=8)
        received = Received()
        try:
            await load.run(20, 0.0)
            await load.settled()
            await asyncio.to_thread(admin.ok, "POST", "/split/0")
            await producer.dag.wait_for(lambda d: d.layout is not None and d.layout.epoch == 1)
            await load.run(20, 0.0)
            await load.settled()
            assert not load.failed
            reader = await StreamConsumer(cluster.service_urls, admin.topic, "stream", "r",
                                          received).start()
            try:
                # The parent's 20 come first; then the children, whatever their cursors say.
                # The mutant's reader never gets theirs: give it a few seconds, no more.
                await wait_until(lambda: len(received.seen) >= 20, 30, "the parent's messages")
                deadline = time.monotonic() + (30 if mutant is None else 5)
                while len(received.seen) < 40 and time.monotonic() < deadline:
                    await asyncio.sleep(0.1)
            finally:
                await reader.close()
        finally:
            await producer.close()
        on_children = [s.value for s in load.sends if s.result.segment_id != 0]
        return on_children, lost(load.sends, received)

    on_children, missing = asyncio.run(asyncio.wait_for(scenario(), 90))
    assert len(on_children) == 20
    assert missing == ([] if mutant is None else on_children)
