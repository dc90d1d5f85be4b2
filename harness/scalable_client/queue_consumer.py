"""`QueueConsumer`: an unordered consumer of a scalable topic (PIP-468 "Consumer
Assignment"): no controller, a Shared consumer on every segment of the DAG, sealed ones
included, each dropped once drained; new segments are picked up from DAG pushes."""

from __future__ import annotations

import asyncio

from harness.scalable_client.segment_consumer import MessageHandler
from harness.scalable_client.segment_reader import SegmentReader
from wire.pulsar_api_pb2 import CommandSubscribe

FOLLOW_INTERVAL = 0.2
"""How often the DAG watcher's latest layout is compared with the segments attached."""


class QueueConsumer(SegmentReader):
    def __init__(self, service_urls: list[str], topic: str, subscription: str,
                 consumer_name: str, on_message: MessageHandler, timeout: float = 60.0,
                 token: str | None = None) -> None:
        super().__init__(service_urls, topic, subscription, consumer_name, on_message, timeout,
                         token)
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
            self._attach(segment.segment_id, self.topic.segment_topic(segment),
                         CommandSubscribe.Shared)

    async def _drop_drained(self) -> None:
        for segment_id, consumer in list(self._segments.items()):
            if consumer.drained.is_set():
                self.finished.add(segment_id)
                await self._segments.pop(segment_id).close()

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        await self._close_all()
