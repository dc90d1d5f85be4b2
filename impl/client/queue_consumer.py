"""`QueueConsumer`: an unordered consumer of a scalable topic (PIP-468 "Consumer
Assignment"): no controller, a Shared consumer on every segment of the DAG, sealed ones
included, each dropped once drained; new segments are picked up from DAG pushes."""

from __future__ import annotations

import asyncio

from impl.client.connection import ConnectionPool
from impl.client.dag import DagWatcher
from impl.client.segment_consumer import MessageHandler, SegmentConsumer
from impl.protocol.pulsar_api_pb2 import CommandSubscribe
from impl.scalable.names import ScalableTopicName

FOLLOW_INTERVAL = 0.2
"""How often the DAG watcher's latest layout is compared with the segments attached."""


class QueueConsumer:
    def __init__(self, service_urls: list[str], topic: str, subscription: str,
                 consumer_name: str, on_message: MessageHandler, timeout: float = 60.0) -> None:
        self.topic = ScalableTopicName.parse(topic)
        self.subscription = subscription
        self.name = consumer_name
        self._on_message = on_message
        self._timeout = timeout
        self._pool = ConnectionPool(service_urls)
        self.dag = DagWatcher(self._pool, str(self.topic), timeout)
        self._segments: dict[int, SegmentConsumer] = {}
        self.finished: set[int] = set()
        """Segments read to their end and dropped."""
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> QueueConsumer:
        await self.dag.start()
        self._task = asyncio.create_task(self._follow())
        return self

    async def _follow(self) -> None:
        while True:
            self._attach_new()
            await self._drop_drained()
            await asyncio.sleep(FOLLOW_INTERVAL)

    def _attach_new(self) -> None:
        layout = self.dag.layout
        assert layout is not None
        for segment in layout.segments.values():
            if segment.segment_id in self._segments or segment.segment_id in self.finished:
                continue
            consumer = SegmentConsumer(self._pool, self.topic.segment_topic(segment),
                                       self.subscription, CommandSubscribe.Shared, self.name,
                                       self._on_message, self._timeout)
            self._segments[segment.segment_id] = consumer
            consumer.start()

    async def _drop_drained(self) -> None:
        for segment_id, consumer in list(self._segments.items()):
            if consumer.drained.is_set():
                self.finished.add(segment_id)
                await self._segments.pop(segment_id).close()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        for consumer in self._segments.values():
            await consumer.close()
        self.dag.close()
        self._pool.close()
