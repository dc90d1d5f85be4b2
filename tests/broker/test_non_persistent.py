"""`non-persistent://` topics with the official client: messages reach the consumers
connected when they are sent, nothing is stored, and nobody gets them later."""

from __future__ import annotations

import pulsar

from tests.broker.conftest import MemoryBroker
from tests.broker.test_official_client import drain

TOPIC = "non-persistent://public/default/live"


def test_a_connected_consumer_receives_and_nothing_is_stored(
        client: pulsar.Client, memory_broker: MemoryBroker) -> None:
    consumer = client.subscribe(TOPIC, "now")
    producer = client.create_producer(TOPIC, batching_enabled=False)
    sent = [f"m-{n}".encode() for n in range(20)]
    ids = [producer.send(data) for data in sent]
    assert drain(consumer) == sent
    assert len({(i.ledger_id(), i.entry_id()) for i in ids}) == len(sent)
    assert memory_broker.ownership.ledgers == {}, "no ledger was opened"


def test_a_send_without_consumers_is_receipted_and_a_later_subscriber_gets_nothing_old(
        client: pulsar.Client) -> None:
    producer = client.create_producer(TOPIC, batching_enabled=False)
    producer.send(b"to nobody")  # returns: the broker receipts it
    late = client.subscribe(TOPIC, "late", initial_position=pulsar.InitialPosition.Earliest)
    assert drain(late, timeout_ms=500) == []
    producer.send(b"heard")
    assert drain(late) == [b"heard"]


def test_a_subscription_that_lost_its_consumers_keeps_nothing_for_them(
        client: pulsar.Client) -> None:
    producer = client.create_producer(TOPIC, batching_enabled=False)
    first = client.subscribe(TOPIC, "comes-back")
    producer.send(b"seen")
    assert drain(first) == [b"seen"]
    first.close()
    producer.send(b"missed")
    again = client.subscribe(TOPIC, "comes-back")
    assert drain(again, timeout_ms=500) == []
