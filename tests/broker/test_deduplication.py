"""Broker-side deduplication as a producer's user sees it with the official client: a
repeated sequence id is stored once and answered with message id -1:-1, a new producer of
the same name continues after the last sequence id, and the state survives an unload
(which the mutant `dedup-state-lost-on-owner-change` breaks). Switching it by namespace
and topic policy is tested against a real broker in tests/cluster/test_admin_paths.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest

from harness.workloads.official_client import DEDUPLICATED, send_recorded
from history.writer import ClientProcess, HistoryWriter, SequentialIds
from impl.broker.dedup_policy import FixedDeduplication
from impl.mutants import NONE, Mutants
from impl.system_cursors import DEDUPLICATION_CURSOR
from tests.broker.conftest import MemoryBroker, official_client, serving
from tests.cluster.raw_producer import RawProducer
from wire.pulsar_api_pb2 import BaseCommand, ServerError

TOPIC = "persistent://public/default/deduplicated"
NAME = "the-producer"
SNAPSHOT_EVERY = 2
"""Small, so the tests see a snapshot taken and entries replayed after it."""


@pytest.fixture
def deduplicating() -> Iterator[MemoryBroker]:
    with serving(deduplication=FixedDeduplication(True, SNAPSHOT_EVERY)) as broker:
        yield broker


def count_stored(broker: MemoryBroker) -> int:
    return len(broker.ledger(TOPIC).entries)


def named_producer(client: pulsar.Client) -> pulsar.Producer:
    return client.create_producer(TOPIC, producer_name=NAME, batching_enabled=False)


def send_twice(client: pulsar.Client) -> list[pulsar.MessageId]:
    """The official Python client ignores a `sequence_id` of 0, so ids start at 1."""
    producer = named_producer(client)
    return [producer.send(b"m1", sequence_id=1), producer.send(b"m1", sequence_id=1),
            producer.send(b"m2", sequence_id=2)]


def test_a_repeated_sequence_id_is_stored_once(deduplicating: MemoryBroker) -> None:
    client = official_client(deduplicating.url)
    consumer = client.subscribe(TOPIC, "sub", initial_position=pulsar.InitialPosition.Earliest)
    first, repeat, second = send_twice(client)
    assert (repeat.ledger_id(), repeat.entry_id()) == (-1, -1)
    assert first.entry_id() + 1 == second.entry_id()
    received = [consumer.receive(5000).data() for _ in range(2)]
    assert received == [b"m1", b"m2"]
    assert count_stored(deduplicating) == 2
    client.close()


def test_without_deduplication_the_repeat_is_stored(memory_broker: MemoryBroker,
                                                     client: pulsar.Client) -> None:
    send_twice(client)
    assert count_stored(memory_broker) == 3


def test_a_new_producer_of_the_name_continues_after_the_last_sequence_id(
        deduplicating: MemoryBroker) -> None:
    client = official_client(deduplicating.url)
    first = named_producer(client)
    for n in range(5):
        first.send(f"m{n}".encode())
    first.close()
    again = named_producer(client)
    assert again.last_sequence_id() == 4
    again.send(b"m5")  # numbered 5 by the client: a new message, stored
    assert count_stored(deduplicating) == 6
    client.close()


def test_a_batch_counts_by_its_highest_sequence_id(deduplicating: MemoryBroker) -> None:
    """As the Java client marks a batch (the C++ one behind the Python client sends only
    its first sequence id, and Pulsar then counts that one)."""
    raw = RawProducer(deduplicating.url, TOPIC, NAME)
    raw.send(1, b"m1..m3", highest_sequence_id=3)
    raw.send(2, b"m2")
    written, repeat = raw.collect(1.0)
    assert written.send_receipt.highest_sequence_id == 3
    assert repeat.send_receipt.message_id.ledgerId == 2**64 - 1  # -1: a duplicate
    raw.close()
    client = official_client(deduplicating.url)
    assert named_producer(client).last_sequence_id() == 3
    client.close()
    assert count_stored(deduplicating) == 1


def hold_writes(broker: MemoryBroker, held: bool) -> None:
    flow = broker.ledger(TOPIC).writes_flow

    async def switch() -> None:
        (flow.clear if held else flow.set)()
    broker.run(switch())


def test_a_copy_of_a_write_in_flight_is_refused_then_answered_as_stored(
        deduplicating: MemoryBroker) -> None:
    raw = RawProducer(deduplicating.url, TOPIC, NAME)
    hold_writes(deduplicating, True)
    raw.send(1, b"m1")
    raw.send(1, b"m1")  # its first copy is not written yet: nobody knows whether it will be
    assert raw.collect(0.5) == []  # receipts wait for the write, and errors for receipts
    hold_writes(deduplicating, False)
    written, refused = raw.collect(1.0)
    assert written.type == BaseCommand.SEND_RECEIPT
    assert (refused.type, refused.send_error.error) == (BaseCommand.SEND_ERROR,
                                                        ServerError.PersistenceError)
    raw.send(1, b"m1")  # the client's resend after it reconnected
    (again,) = raw.collect(1.0)
    assert again.send_receipt.message_id.ledgerId == again.send_receipt.message_id.entryId \
        == 2**64 - 1  # -1:-1 on the wire
    assert count_stored(deduplicating) == 1
    raw.close()


def test_without_deduplication_a_new_producer_starts_from_nothing(
        client: pulsar.Client) -> None:
    named_producer(client).send(b"m0")
    assert client.create_producer(TOPIC, producer_name="other").last_sequence_id() == -1


def resend_after_unload(broker: MemoryBroker) -> int:
    """Three messages, an unload (a new owner of the same ledger), then the last two sent
    again with their sequence ids: how many entries the topic holds then. With a snapshot
    every two entries, the first resend is known from the snapshot, the second only from
    replaying the entry after it."""
    client = official_client(broker.url)
    producer = named_producer(client)
    for n in range(1, 4):
        producer.send(f"m{n}".encode(), sequence_id=n)
    assert broker.ledger(TOPIC).cursors()[DEDUPLICATION_CURSOR].properties == {NAME: 2}
    broker.unload(TOPIC)
    producer.send(b"m2", sequence_id=2)  # the client re-creates the producer first
    producer.send(b"m3", sequence_id=3)
    client.close()
    return count_stored(broker)


@pytest.mark.parametrize(("mutants", "entries"), [
    (NONE, 3),
    (Mutants.of(["dedup-state-lost-on-owner-change"]), 5),
], ids=["contract", "mutant-dedup-state-lost-on-owner-change"])
def test_resends_after_an_unload_are_not_stored_again(mutants: Mutants, entries: int) -> None:
    with serving(mutants=mutants,
                 deduplication=FixedDeduplication(True, SNAPSHOT_EVERY)) as broker:
        assert resend_after_unload(broker) == entries


def test_the_workloads_record_a_dropped_repeat_without_a_position(
        deduplicating: MemoryBroker, tmp_path: Path) -> None:
    """The -1:-1 of a dropped repeat names no stored position: recorded as one, it would
    put the value at a second position, and every dropped repeat at the same one."""
    client = official_client(deduplicating.url)
    producer = named_producer(client)
    fields = {"key": "k", "topic": TOPIC, "cluster": "a"}
    with HistoryWriter(tmp_path / "history.jsonl") as history:
        process = ClientProcess(history, SequentialIds("p"))
        for _ in range(2):
            send_recorded(process, producer, "m1", fields, sequence_id=1)
    client.close()
    completions = [json.loads(line) for line in (tmp_path / "history.jsonl").open()
                   if '"invoke"' not in line]
    assert [(e["type"], e.get("position"), e.get("detail")) for e in completions] == [
        ("ok", completions[0]["position"], None),
        ("ok", None, json.dumps(DEDUPLICATED, separators=(",", ":")))]
    assert not completions[0]["position"].startswith("-1")
