"""What a producer's user notices, with the official client: access modes (PIP-68), unique
producer names, delayed delivery, the message size limit and chunking. Each behaviour a
mutant breaks is checked once as the contract and once with the mutant on, where the harm
must show."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from datetime import timedelta

import pulsar
import pytest

from impl.mutants import Mutants
from tests.broker.conftest import MemoryBroker, official_client, serving
from tests.cluster.raw_producer import RawProducer
from wire.frames import DEFAULT_MAX_MESSAGE_SIZE
from wire.pulsar_api_pb2 import BaseCommand

TOPIC = "persistent://public/default/producer-contract"
MiB = 1024 * 1024
Mode = pulsar.ProducerAccessMode


@pytest.fixture
def mutant_client(request: pytest.FixtureRequest) -> Iterator[pulsar.Client]:
    """A client of a broker with the mutant named by indirect parametrization."""
    with serving(mutants=Mutants.of([request.param])) as broker:
        client = official_client(broker.url)
        yield client
        client.close()


def producer(client: pulsar.Client, mode: pulsar.ProducerAccessMode = Mode.Shared,
             **options: object) -> pulsar.Producer:
    return client.create_producer(TOPIC, access_mode=mode, **options)


def refusal(create: object) -> type[Exception] | None:
    """The exception type creating a producer raised, or None when it was accepted."""
    assert callable(create)
    try:
        create()
    except pulsar.PulsarException as exc:
        return type(exc)
    return None


# --- access modes ------------------------------------------------------------------------


def second_exclusive(client: pulsar.Client) -> tuple[type[Exception] | None, ...]:
    producer(client, Mode.Exclusive)
    return (refusal(lambda: producer(client, Mode.Exclusive)),
            refusal(lambda: producer(client, Mode.Shared)))


def test_an_exclusive_producer_keeps_out_every_other(client: pulsar.Client) -> None:
    assert second_exclusive(client) == (pulsar.ProducerFenced, pulsar.ProducerBusy)


@pytest.mark.parametrize("mutant_client", ["exclusive-producer-not-enforced"], indirect=True)
def test_mutant_exclusive_producer_not_enforced_lets_a_second_writer_in(
        mutant_client: pulsar.Client) -> None:
    assert second_exclusive(mutant_client) == (None, None)


def test_wait_for_exclusive_gets_the_topic_when_the_first_closes(
        client: pulsar.Client) -> None:
    first = producer(client, Mode.Exclusive)
    waiting: list[pulsar.Producer] = []
    thread = threading.Thread(
        target=lambda: waiting.append(producer(client, Mode.WaitForExclusive)), daemon=True)
    thread.start()
    thread.join(1.0)
    assert not waiting, "WaitForExclusive got in beside an exclusive producer"
    first.send(b"from the first")
    first.close()
    thread.join(10)
    assert waiting, "WaitForExclusive did not get the topic after the first closed"
    waiting[0].send(b"from the second")


def test_exclusive_with_fencing_takes_over_and_the_old_producer_fails(
        client: pulsar.Client) -> None:
    old = producer(client, Mode.Exclusive, send_timeout_millis=5000)
    old.send(b"before")
    new = producer(client, Mode.ExclusiveWithFencing)
    new.send(b"after")
    started = time.monotonic()
    with pytest.raises(pulsar.PulsarException):
        old.send(b"fenced")
    assert time.monotonic() - started < 10


def same_name(client: pulsar.Client) -> type[Exception] | None:
    producer(client, producer_name="only-one")
    return refusal(lambda: producer(client, producer_name="only-one"))


def test_a_second_producer_with_the_same_name_is_busy(client: pulsar.Client) -> None:
    assert same_name(client) is pulsar.ProducerBusy


@pytest.mark.parametrize("mutant_client", ["producer-name-not-exclusive"], indirect=True)
def test_mutant_producer_name_not_exclusive_accepts_the_twin(
        mutant_client: pulsar.Client) -> None:
    assert same_name(mutant_client) is None


# --- delayed delivery --------------------------------------------------------------------

DELAY = 2.0


def delayed_arrival(client: pulsar.Client, kind: pulsar.ConsumerType) -> tuple[float, bytes]:
    """Seconds until a message sent with `deliver_after` DELAY is received (after one sent
    without delay, which must come first), and its payload."""
    consumer = client.subscribe(TOPIC, "delayed", consumer_type=kind)
    sender = producer(client)
    started = time.monotonic()
    sender.send(b"later", deliver_after=timedelta(seconds=DELAY))
    sender.send(b"now")
    first = consumer.receive(timeout_millis=5000)
    if first.data() == b"now":
        consumer.acknowledge(first)
        first = consumer.receive(timeout_millis=int(DELAY * 1000) + 5000)
    consumer.acknowledge(first)
    return time.monotonic() - started, first.data()


def test_deliver_after_is_honoured_on_a_shared_subscription(client: pulsar.Client) -> None:
    waited, data = delayed_arrival(client, pulsar.ConsumerType.Shared)
    assert data == b"later"
    assert DELAY - 0.1 <= waited < DELAY + 3


def test_deliver_after_is_honoured_on_a_key_shared_subscription(
        client: pulsar.Client) -> None:
    waited, _ = delayed_arrival(client, pulsar.ConsumerType.KeyShared)
    assert waited >= DELAY - 0.1


def test_an_exclusive_subscription_delivers_delayed_messages_at_once(
        client: pulsar.Client) -> None:
    waited, data = delayed_arrival(client, pulsar.ConsumerType.Exclusive)
    assert (data, waited < DELAY / 2) == (b"later", True)


@pytest.mark.parametrize("mutant_client", ["deliver-at-ignored"], indirect=True)
def test_mutant_deliver_at_ignored_delivers_early(mutant_client: pulsar.Client) -> None:
    waited, _ = delayed_arrival(mutant_client, pulsar.ConsumerType.Shared)
    assert waited < DELAY / 2


# --- size limit and chunking -------------------------------------------------------------


def test_a_chunked_6_mib_message_round_trips_and_its_ack_empties_the_backlog(
        client: pulsar.Client, memory_broker: MemoryBroker) -> None:
    consumer = client.subscribe(TOPIC, "chunks")
    sender = producer(client, chunking_enabled=True, batching_enabled=False,
                      send_timeout_millis=5000)
    big = os.urandom(6 * MiB)
    sender.send(big)
    message = consumer.receive(timeout_millis=10_000)
    consumer.acknowledge(message)
    assert message.data() == big
    assert len(memory_broker.ledger(TOPIC).entries) == 2  # stored as two chunks
    deadline = time.monotonic() + 5
    while memory_broker.backlog(TOPIC, "chunks") and time.monotonic() < deadline:
        time.sleep(0.1)
    assert memory_broker.backlog(TOPIC, "chunks") == 0


def full_size_send(url: str) -> tuple[bool, bool]:
    """Send, without the official client's own size check, one entry of the largest size
    the broker announced; returns (receipted, connection still open)."""
    raw = RawProducer(url, TOPIC)
    try:
        raw.send(0, b"x" * (DEFAULT_MAX_MESSAGE_SIZE - 32))  # entry <= max < frame
        replies = raw.collect(3.0)
        return any(r.type == BaseCommand.SEND_RECEIPT for r in replies), not raw.closed
    except OSError:  # the broker closed the connection while the frame was on its way
        return False, False
    finally:
        raw.close()


def test_a_full_size_entry_fits_in_a_frame(memory_broker: MemoryBroker) -> None:
    assert full_size_send(memory_broker.url) == (True, True)


def test_mutant_frame_limit_without_padding_drops_a_full_size_entry() -> None:
    with serving(mutants=Mutants.of(["frame-limit-without-padding"])) as broker:
        assert full_size_send(broker.url) == (False, False)


def test_a_message_over_the_limit_fails_promptly_and_the_producer_goes_on(
        client: pulsar.Client) -> None:
    consumer = client.subscribe(TOPIC, "after-too-big")
    sender = producer(client, batching_enabled=False)
    started = time.monotonic()
    with pytest.raises(pulsar.MessageTooBig):
        sender.send(os.urandom(6 * MiB))
    assert time.monotonic() - started < 3
    sender.send(b"small")
    assert consumer.receive(timeout_millis=5000).data() == b"small"
