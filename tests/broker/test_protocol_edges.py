"""What the front end promises at the frame level: permits bound what a consumer gets, bad
bytes close only the connection that sent them, silent connections are closed, and
acknowledgements are answered when asked."""

from __future__ import annotations

import pulsar
import pytest

from impl.broker.subscription import position_of
from tests.broker.conftest import MemoryBroker
from tests.cluster.raw_producer import JUNK, RawConsumer, RawProducer, send_junk
from wire.pulsar_api_pb2 import BaseCommand

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


@pytest.mark.parametrize("memory_broker", [2.0], indirect=True)
def test_a_silent_connection_is_pinged_then_closed(memory_broker: MemoryBroker) -> None:
    # A ping after two silent seconds, the close after four: the windows below leave room
    # for a loaded machine on both sides (with one second, a test process stalled for two
    # on a busy machine lost its answering connection).
    answering = RawConsumer(memory_broker.url, TOPIC, "alive")  # answers PING as it reads
    silent = RawConsumer(memory_broker.url, TOPIC, "silent")
    assert answering.collect(7.0) == []  # meanwhile the silent one reads nothing
    assert not answering.closed
    silent.collect(2.0)
    assert silent.closed


def _one_message(broker: MemoryBroker, subscription: str) -> tuple[RawConsumer, BaseCommand]:
    """A consumer of `subscription` and the one message it was sent."""
    consumer = RawConsumer(broker.url, TOPIC, subscription)
    producer = RawProducer(broker.url, TOPIC)
    producer.send(0, b"x")
    producer.collect(0.5)
    consumer.flow(1)
    (message,) = consumer.collect(0.5)
    return consumer, message


def test_acknowledgements_with_a_request_id_get_a_response(memory_broker: MemoryBroker) -> None:
    consumer, message = _one_message(memory_broker, "receipts")
    consumer.acknowledge(message.message.message_id, request_id=7)
    (response,) = consumer.collect(0.5)
    assert response.type == BaseCommand.ACK_RESPONSE and response.ackResponse.request_id == 7
    assert not response.ackResponse.HasField("error")
    assert memory_broker.backlog(TOPIC, "receipts") == 0


@pytest.mark.parametrize("cumulative", [False, True])
def test_a_retried_acknowledgement_is_answered_only_once_stored(
        memory_broker: MemoryBroker, cumulative: bool) -> None:
    """The cursor's write fails (the metadata store is away) after the acknowledgement is
    applied in memory; the client's retry finds it applied already and must still wait
    for the write before its answer, or a new owner redelivers an answered ack (a smoke
    run under a ZooKeeper isolation found this)."""
    consumer, message = _one_message(memory_broker, "retried")
    cursor = memory_broker.ledger(TOPIC).cursors()["retried"]
    cursor.failing_writes = 1

    consumer.acknowledge(message.message.message_id, request_id=1, cumulative=cumulative)
    (refused,) = consumer.collect(0.5)
    assert refused.ackResponse.HasField("error")
    consumer.acknowledge(message.message.message_id, request_id=2, cumulative=cumulative)
    (answered,) = consumer.collect(0.5)
    assert not answered.ackResponse.HasField("error")
    assert cursor.persisted.mark_delete == position_of(message.message.message_id)


def test_an_acknowledgement_another_owner_refused_sends_the_consumers_away(
        memory_broker: MemoryBroker) -> None:
    """Another broker opened the topic, so the cursor's write fails on its version: the
    broker must give the topic up, as when an add finds its ledger fenced, instead of
    keeping consumers on a ledger that no longer grows and refusing every ack they send
    (a second owner made by a stale ownership node showed this)."""
    consumer, message = _one_message(memory_broker, "deposed")
    memory_broker.ledger(TOPIC).cursors()["deposed"].deposed = True
    consumer.acknowledge(message.message.message_id, request_id=1)
    answers = consumer.collect(1.0)
    assert [c.type for c in answers] == [BaseCommand.ACK_RESPONSE, BaseCommand.CLOSE_CONSUMER]
    assert answers[0].ackResponse.HasField("error")
