"""What the front end promises at the frame level: permits bound what a consumer gets, and
bad bytes close only the connection that sent them."""

from __future__ import annotations

import pulsar

from impl.protocol.pulsar_api_pb2 import BaseCommand
from tests.broker.conftest import MemoryBroker
from tests.cluster.raw_producer import JUNK, RawConsumer, RawProducer, send_junk

TOPIC = "persistent://public/default/edges"


def test_a_consumer_gets_no_more_messages_than_its_permits(memory_broker: MemoryBroker) -> None:
    consumer = RawConsumer(memory_broker.url, TOPIC, "permits")
    producer = RawProducer(memory_broker.url, TOPIC)
    for n in range(20):
        producer.send(n, b"x")
    assert len(producer.collect(1.0)) == 20
    consumer.flow(5)
    assert [c.type for c in consumer.collect(1.0)] == [BaseCommand.MESSAGE] * 5
    consumer.flow(3)
    messages = consumer.collect(1.0)
    assert [c.message.message_id.entryId for c in messages] == [5, 6, 7]


def test_garbage_and_truncated_frames_close_only_their_own_connection(
        memory_broker: MemoryBroker, client: pulsar.Client) -> None:
    producer = client.create_producer(TOPIC, batching_enabled=False)
    for junk in JUNK:
        assert send_junk(memory_broker.url, junk) == b""
    producer.send(b"still served")
