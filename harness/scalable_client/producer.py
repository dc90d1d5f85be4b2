"""`ScalableProducer`: sends each key to the active segment whose range holds the key's
hash (history.md's hash, `history.schema.key_hash`), as the latest DAG says.

Per-key order: a key's next send starts only once its previous send is resolved, so a
re-routed message can never overtake its predecessor. When a segment answers
TopicTerminated (PIP-468 split/merge step 3), the producer waits for the DAG in which that
segment is sealed, then sends to the new active segment for the hash. The parent is sealed
before the layout changes, so nothing is written to both. `token`: what every connection
presents in CONNECT (None: no credentials)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from harness.scalable_client.dag import DagWatcher
from harness.scalable_client.errors import SegmentTerminated
from harness.scalable_client.message_id import MessageId
from harness.scalable_client.segment_producer import SegmentProducer
from history.schema import key_hash
from wire.connection import ConnectionPool
from wire.topic_names import ScalableTopicName


@dataclass(frozen=True)
class SendResult:
    segment_id: int
    segment_topic: str
    position: MessageId


class ScalableProducer:
    def __init__(self, service_urls: list[str], topic: str, name: str = "scalable-producer",
                 timeout: float = 60.0, token: str | None = None,
                 layout_lag_s: float = 0.0) -> None:
        """`layout_lag_s`: how long after a new DAG arrives the producer routes by it."""
        self.topic = ScalableTopicName.parse(topic)
        self.name = name
        self._pool = ConnectionPool(service_urls, token=token)
        self._timeout = timeout
        self.dag = DagWatcher(self._pool, str(self.topic), timeout, layout_lag_s)
        self._segments: dict[int, SegmentProducer] = {}
        self._last: dict[str, asyncio.Future[SendResult]] = {}

    async def start(self) -> ScalableProducer:
        await self.dag.start()
        return self

    def send(self, key: str, payload: bytes) -> asyncio.Future[SendResult]:
        """Queue a send; the future resolves with where it was stored. Sends of one key are
        performed one after the other, in call order."""
        previous = self._last.get(key)
        future = asyncio.ensure_future(self._send_after(previous, key, payload))
        self._last[key] = future
        return future

    async def _send_after(self, previous: asyncio.Future[SendResult] | None, key: str,
                          payload: bytes) -> SendResult:
        if previous is not None:
            await asyncio.wait([previous])  # its outcome is its caller's business
        hash_value = key_hash(key)
        while True:
            assert self.dag.layout is not None
            segment = self.dag.layout.active_segment_for(hash_value)
            producer = self._producer(segment.segment_id)
            try:
                position = await producer.send(key, payload)
                return SendResult(segment.segment_id, producer.topic, position)
            except SegmentTerminated:
                await self._until_sealed(segment.segment_id)

    async def _until_sealed(self, segment_id: int) -> None:
        """Wait for a DAG in which the segment is no longer active."""
        await self.dag.wait_for(lambda d: d.layout is not None and all(
            s.segment_id != segment_id for s in d.layout.active_segments))

    def _producer(self, segment_id: int) -> SegmentProducer:
        found = self._segments.get(segment_id)
        if found is None:
            assert self.dag.layout is not None
            topic = self.topic.segment_topic(self.dag.layout.segment(segment_id))
            found = self._segments[segment_id] = SegmentProducer(
                self._pool, topic, f"{self.name}-{segment_id}", self._timeout)
        return found

    async def close(self) -> None:
        for producer in self._segments.values():
            producer.close()
        self.dag.close()
        self._pool.close()
