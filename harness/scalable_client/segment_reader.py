"""What both consumer kinds of a scalable topic share: one DAG watch, one connection pool,
and the per-segment consumers they hold; they differ only in which segments they attach
to (an assignment from the controller, or every segment of the DAG). `token`: what every
connection presents in CONNECT (None: no credentials)."""

from __future__ import annotations

from harness.scalable_client.dag import DagWatcher
from harness.scalable_client.segment_consumer import MessageHandler, SegmentConsumer
from wire.connection import ConnectionPool
from wire.pulsar_api_pb2 import CommandSubscribe
from wire.topic_names import ScalableTopicName


class SegmentReader:
    def __init__(self, service_urls: list[str], topic: str, subscription: str,
                 consumer_name: str, on_message: MessageHandler, timeout: float = 60.0,
                 token: str | None = None) -> None:
        self.topic = ScalableTopicName.parse(topic)
        self.subscription = subscription
        self.name = consumer_name
        self._on_message = on_message
        self._timeout = timeout
        self._pool = ConnectionPool(service_urls, token=token)
        self.dag = DagWatcher(self._pool, str(self.topic), timeout)
        self._segments: dict[int, SegmentConsumer] = {}

    def _attach(self, segment_id: int, segment_topic: str,
                sub_type: CommandSubscribe.SubType) -> None:
        """Start reading one segment topic in the subscription."""
        consumer = SegmentConsumer(self._pool, segment_topic, self.subscription, sub_type,
                                   self.name, self._on_message, self._timeout)
        self._segments[segment_id] = consumer
        consumer.start()

    async def _close_all(self) -> None:
        for consumer in self._segments.values():
            await consumer.close()
        self.dag.close()
        self._pool.close()
