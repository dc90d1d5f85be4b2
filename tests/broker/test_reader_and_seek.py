"""Readers (non-durable subscriptions with a start position), SEEK, and a command of a type
the protocol file lacks, as the official client and a raw connection see them (the
refusal of each request the broker does not serve: test_command_table.py)."""

from __future__ import annotations

import struct
import time

import pulsar
import pytest

from impl.mutants import Mutants
from tests.broker.conftest import MemoryBroker, official_client, serving
from tests.cluster.raw_producer import RawConnection
from tests.fixtures.receiving import until_quiet

TOPIC = "persistent://public/default/readers"


def produce(client: pulsar.Client, count: int, first: int = 0,
            batching: bool = False) -> list[pulsar.MessageId]:
    producer = client.create_producer(TOPIC, batching_enabled=batching,
                                      batching_max_publish_delay_ms=50)
    ids: list[pulsar.MessageId] = []
    for n in range(first, first + count):
        producer.send_async(f"m{n}".encode(), lambda _res, mid: ids.append(mid))
    producer.flush()
    producer.close()
    return ids


def read_all(reader: pulsar.Reader) -> list[str]:
    """What the reader says is there, read until it says nothing is left."""
    got = []
    while reader.has_message_available():
        got.append(reader.read_next(2000).data().decode())
    return got


def receive_all(consumer: pulsar.Consumer, ack: bool = True) -> list[pulsar.Message]:
    got = []
    for message in until_quiet(consumer, 1000):
        got.append(message)
        if ack:
            consumer.acknowledge(message)
    return got


def names(messages: list[pulsar.Message]) -> list[str]:
    return [m.data().decode() for m in messages]


def test_a_reader_from_earliest_reads_everything(client: pulsar.Client) -> None:
    produce(client, 5)
    reader = client.create_reader(TOPIC, pulsar.MessageId.earliest)
    assert read_all(reader) == [f"m{n}" for n in range(5)]


def test_a_reader_from_latest_reads_only_what_comes_later(client: pulsar.Client) -> None:
    produce(client, 3)
    reader = client.create_reader(TOPIC, pulsar.MessageId.latest)
    assert read_all(reader) == []
    produce(client, 2, first=3)
    assert [reader.read_next(2000).data() for _ in range(2)] == [b"m3", b"m4"]
    assert not reader.has_message_available()


@pytest.mark.parametrize(("inclusive", "expected"), [(False, ["m3", "m4"]),
                                                     (True, ["m2", "m3", "m4"])])
def test_a_reader_from_a_message_id_starts_after_it_or_at_it_when_inclusive(
        client: pulsar.Client, inclusive: bool, expected: list[str]) -> None:
    ids = produce(client, 5)
    reader = client.create_reader(TOPIC, ids[2], start_message_id_inclusive=inclusive)
    assert read_all(reader) == expected


def test_has_message_available_is_truthful_also_inside_a_batch(client: pulsar.Client) -> None:
    reader = client.create_reader(TOPIC, pulsar.MessageId.earliest)
    assert not reader.has_message_available()  # nothing written yet
    produce(client, 4, batching=True)  # one batch: the last id names its last message
    for n in range(4):
        assert reader.has_message_available(), f"message {n} of the batch is left"
        assert reader.read_next(2000).data() == f"m{n}".encode()
    assert not reader.has_message_available()


def test_a_closed_reader_leaves_no_subscription(client: pulsar.Client,
                                                memory_broker: MemoryBroker) -> None:
    produce(client, 2)
    reader = client.create_reader(TOPIC, pulsar.MessageId.earliest)
    assert read_all(reader) == ["m0", "m1"]
    subscriptions = memory_broker.topic_stats(TOPIC)["subscriptions"]
    assert [s["isDurable"] for s in subscriptions.values()] == [False]
    assert memory_broker.ledger(TOPIC).cursors() == {}  # nothing persisted, nothing held
    reader.close()
    assert memory_broker.topic_stats(TOPIC)["subscriptions"] == {}


def test_seek_to_a_message_id_delivers_everything_from_there_again(
        client: pulsar.Client, memory_broker: MemoryBroker) -> None:
    ids = produce(client, 5)
    consumer = client.subscribe(TOPIC, "sub", initial_position=pulsar.InitialPosition.Earliest,
                                start_message_id_inclusive=True)
    first = receive_all(consumer, ack=False)  # out at the consumer, unacknowledged
    assert names(first) == [f"m{n}" for n in range(5)]
    consumer.acknowledge_cumulative(first[-1])
    consumer.seek(ids[1])
    again = receive_all(consumer)
    assert names(again) == ["m1", "m2", "m3", "m4"]
    assert [m.redelivery_count() for m in again] == [0] * 4  # a fresh start, no redelivery
    assert memory_broker.backlog(TOPIC, "sub") == 0


def seek_forward_past_unacknowledged(client: pulsar.Client) -> list[pulsar.Message]:
    """What a Shared consumer gets after seeking past messages it holds unacknowledged."""
    ids = produce(client, 5)
    consumer = client.subscribe(TOPIC, "sub", pulsar.ConsumerType.Shared,
                                initial_position=pulsar.InitialPosition.Earliest,
                                start_message_id_inclusive=True)
    assert len(receive_all(consumer, ack=False)) == 5
    consumer.seek(ids[3])
    return receive_all(consumer)


def test_a_forward_seek_forgets_what_was_out_at_the_consumers(client: pulsar.Client) -> None:
    again = seek_forward_past_unacknowledged(client)
    assert names(again) == ["m3", "m4"]
    assert [m.redelivery_count() for m in again] == [0, 0]


def test_mutant_seek_keeps_redelivery_state_withholds_what_was_out() -> None:
    with serving(mutants=Mutants.of(["seek-keeps-redelivery-state"])) as broker:
        client = official_client(broker.url)
        try:
            again = seek_forward_past_unacknowledged(client)
        finally:
            client.close()
    assert "m3" not in names(again), "held as out at a consumer the seek disconnected"


def test_seek_moves_the_durable_position_back(client: pulsar.Client,
                                              memory_broker: MemoryBroker) -> None:
    ids = produce(client, 4)
    consumer = client.subscribe(TOPIC, "sub", initial_position=pulsar.InitialPosition.Earliest)
    receive_all(consumer)
    assert memory_broker.backlog(TOPIC, "sub") == 0
    consumer.seek(ids[1])
    assert memory_broker.backlog(TOPIC, "sub") == 3  # m1..m3 unacknowledged again


def test_seek_to_a_publish_time_starts_at_the_first_message_published_then(
        client: pulsar.Client) -> None:
    produce(client, 3)
    time.sleep(0.05)
    boundary = int(time.time() * 1000)
    time.sleep(0.05)
    produce(client, 2, first=3)
    consumer = client.subscribe(TOPIC, "sub", initial_position=pulsar.InitialPosition.Earliest)
    assert len(receive_all(consumer)) == 5
    consumer.seek(boundary)
    assert names(receive_all(consumer)) == ["m3", "m4"]
    consumer.seek(0)
    assert names(receive_all(consumer)) == [f"m{n}" for n in range(5)]


def test_a_reader_seeks_back(client: pulsar.Client) -> None:
    ids = produce(client, 4)
    reader = client.create_reader(TOPIC, pulsar.MessageId.earliest)
    assert read_all(reader) == ["m0", "m1", "m2", "m3"]
    reader.seek(pulsar.MessageId.earliest)
    assert read_all(reader) == ["m0", "m1", "m2", "m3"]
    reader.seek(ids[2])
    assert read_all(reader) == ["m3"]  # a reader's start is exclusive unless asked otherwise


def test_a_command_of_an_unknown_type_is_not_taken_for_another(
        memory_broker: MemoryBroker) -> None:
    # type 99, no body: parsed, it has no type at all, and the default type is CONNECT
    body = bytes([0x08, 99])
    connection = RawConnection(memory_broker.url)
    connection.send_bytes(struct.pack(">II", 4 + len(body), len(body)) + body)
    assert connection.collect(1.0) == []  # no second CONNECTED
    assert not connection.closed
