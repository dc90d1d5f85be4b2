"""A negatively acknowledged message of a Shared subscription: the client asks for it
again, and the broker delivers it again with a higher redelivery count, except under the
mutant `nack-not-redelivered`, which forgets it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulsar

from impl.mutants import NONE, Mutants
from tests.broker.conftest import official_client, serving
from tests.fixtures.receiving import until_quiet

TOPIC = "persistent://public/default/nacks"


@dataclass(frozen=True)
class _Nacked:
    received: list[tuple[str, int]]
    """Values and redelivery counts, in the order they came."""
    subscription: dict[str, Any]
    """The subscription's stats after the reads."""


def _nack_the_middle_one(mutants: Mutants = NONE) -> _Nacked:
    """m0..m2 sent; m1 negatively acknowledged on its first delivery, the rest acknowledged;
    then read until nothing comes for a second."""
    with serving(mutants=mutants) as broker:
        client = official_client(broker.url)
        try:
            consumer = client.subscribe(TOPIC, "sub", consumer_type=pulsar.ConsumerType.Shared,
                                        negative_ack_redelivery_delay_ms=100)
            producer = client.create_producer(TOPIC, batching_enabled=False)
            for n in range(3):
                producer.send(f"m{n}".encode())
            received = []
            for message in until_quiet(consumer, 1000):
                value = message.data().decode()
                received.append((value, message.redelivery_count()))
                if value == "m1" and message.redelivery_count() == 0:
                    consumer.negative_acknowledge(message)
                else:
                    consumer.acknowledge(message)
            stats: dict[str, Any] = broker.topic_stats(TOPIC)["subscriptions"]["sub"]
            return _Nacked(received, stats)
        finally:
            client.close()


def test_a_negatively_acknowledged_message_comes_again() -> None:
    nacked = _nack_the_middle_one()
    assert nacked.received == [("m0", 0), ("m1", 0), ("m2", 0), ("m1", 1)]
    assert nacked.subscription["msgBacklog"] == 0


def test_mutant_nack_not_redelivered_forgets_it() -> None:
    nacked = _nack_the_middle_one(Mutants.of(["nack-not-redelivered"]))
    assert nacked.received == [("m0", 0), ("m1", 0), ("m2", 0)]
    # In the backlog, yet out at no consumer: the subscription stalls.
    assert (nacked.subscription["msgBacklog"], nacked.subscription["unackedMessages"]) == (1, 0)
