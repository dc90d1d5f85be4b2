"""A consumer that closes with messages out at it: the broker gives them to the
subscription's other consumers (Pulsar's removeConsumer), except under the mutant
`closed-consumer-keeps-unacked`; the stats count what is out at each connected consumer."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulsar

from impl.mutants import NONE, Mutants
from tests.broker.conftest import MemoryBroker, official_client, serving
from tests.fixtures.receiving import until_quiet

TOPIC = "persistent://public/default/closing"
SHARED = pulsar.ConsumerType.Shared


@dataclass(frozen=True)
class _Closed:
    out_before: dict[str, int]
    """Each consumer's `unackedMessages` while the first still held the messages."""
    out_after: dict[str, Any]
    """The subscription's stats once it closed and the other had read what came."""
    redelivered: list[tuple[str, int]]
    """What the other consumer then received: values and redelivery counts."""


def _close_with_messages_out(mutants: Mutants = NONE) -> _Closed:
    """`leaves` receives m0..m2 without acknowledging them, `stays` joins, `leaves`
    closes; `stays` reads what comes."""
    with serving(mutants=mutants) as broker:
        client = official_client(broker.url)
        try:
            leaves = client.subscribe(TOPIC, "sub", consumer_type=SHARED, consumer_name="leaves")
            producer = client.create_producer(TOPIC, batching_enabled=False)
            for n in range(3):
                producer.send(f"m{n}".encode())
            for _ in range(3):
                leaves.receive(timeout_millis=2000)
            stays = client.subscribe(TOPIC, "sub", consumer_type=SHARED, consumer_name="stays")
            out_before = {c["consumerName"]: c["unackedMessages"]
                          for c in _subscription(broker)["consumers"]}
            leaves.close()
            redelivered = [(message.data().decode(), message.redelivery_count())
                           for message in until_quiet(stays, 1000)]
            return _Closed(out_before, _subscription(broker), redelivered)
        finally:
            client.close()


def _subscription(broker: MemoryBroker) -> dict[str, Any]:
    stats: dict[str, Any] = broker.topic_stats(TOPIC)["subscriptions"]["sub"]
    return stats


def test_a_closed_consumers_messages_go_to_the_others() -> None:
    closed = _close_with_messages_out()
    assert closed.out_before == {"leaves": 3, "stays": 0}
    assert closed.redelivered == [("m0", 1), ("m1", 1), ("m2", 1)]
    assert closed.out_after["unackedMessages"] == 3  # now out at `stays`


def test_mutant_closed_consumer_keeps_unacked_withholds_them() -> None:
    closed = _close_with_messages_out(Mutants.of(["closed-consumer-keeps-unacked"]))
    assert closed.redelivered == []
    after = closed.out_after
    # In the backlog, yet out at no consumer that is connected: the subscription stalls.
    assert (after["msgBacklog"], after["unackedMessages"]) == (3, 0)
    assert [c["unackedMessages"] for c in after["consumers"]] == [0]
