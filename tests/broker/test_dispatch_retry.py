"""A dispatch pass that fails after reading strands nothing: what it read and had not
queued is read again. A pass acknowledges on the subscription's behalf what no consumer
may get (unreadable entries here; replication's markers in a geo cluster), and that
write fails while the metadata store is away; the entries read beside them once waited
behind the read position until the topic's next owner, a subscription stalled with a
backlog and idle consumers (an explore run's partition showed it)."""

from __future__ import annotations

import pulsar

from tests.broker.conftest import MemoryBroker
from wire.frames import encode_entry
from wire.pulsar_api_pb2 import MessageMetadata

TOPIC = "persistent://public/default/dispatch-retry"
UNREADABLE = b"\x00\x00\x00\x09not protobuf at all"


def _entry(sequence_id: int, payload: bytes) -> bytes:
    return encode_entry(MessageMetadata(producer_name="p", sequence_id=sequence_id,
                                        publish_time=1), payload)


def test_entries_read_beside_an_acknowledgement_that_failed_are_delivered(
        memory_broker: MemoryBroker, client: pulsar.Client) -> None:
    consumer = client.subscribe(TOPIC, "s", consumer_type=pulsar.ConsumerType.Shared)
    ledger = memory_broker.ledger(TOPIC)
    ledger.cursors()["s"].failing_writes = 1

    async def store_together() -> None:
        # No await suspends between the adds: the dispatcher reads them in one batch.
        for data in (UNREADABLE, _entry(1, b"first"), _entry(2, b"second")):
            await ledger.add_entry(data)

    memory_broker.run(store_together())
    received = [consumer.receive(timeout_millis=5000).data() for _ in range(2)]
    assert received == [b"first", b"second"]
