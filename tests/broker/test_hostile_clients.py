"""What a hostile or broken client cannot do to the broker: make it allocate what the
client names, move a subscription past what was written, store an entry consumers cannot
be sent, hold more connections than the broker allows, or fill its log with tracebacks."""

from __future__ import annotations

import json
import logging
import random
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pulsar
import pytest

from impl.broker.limits import ConnectionLimits
from tests.broker.conftest import MemoryBroker, official_client, serving
from tests.cluster.raw_producer import RawConnection, RawConsumer, RawProducer
from wire.frames import encode_command, encode_entry
from wire.pulsar_api_pb2 import (
    BaseCommand,
    CommandPing,
    CommandSend,
    CompressionType,
    MessageIdData,
    MessageMetadata,
    ServerError,
)

TOPIC = "persistent://public/default/hostile"
REPO = Path(__file__).resolve().parents[2]
U64_MAX = 2**64 - 1


def _published(broker: MemoryBroker, topic: str, count: int) -> None:
    producer = RawProducer(broker.url, topic)
    for n in range(count):
        producer.send(n, f"m{n}".encode())
    receipts = producer.collect(1.0)
    assert [c.type for c in receipts] == [BaseCommand.SEND_RECEIPT] * count
    producer.close()


def _ack_answer(consumer: RawConsumer, message_id: MessageIdData,
                cumulative: bool = False) -> BaseCommand:
    consumer.acknowledge(message_id, request_id=9, cumulative=cumulative)
    (answer,) = consumer.collect(1.0)
    assert answer.type == BaseCommand.ACK_RESPONSE
    return answer


def test_an_ack_naming_a_batch_index_beyond_the_stored_entry_is_refused(
        memory_broker: MemoryBroker) -> None:
    """The broker once built a set of the client's `batch_size` for an entry it had not
    read yet; it now asks the stored entry (one message here) and refuses."""
    _published(memory_broker, TOPIC, 1)
    consumer = RawConsumer(memory_broker.url, TOPIC, "batch-size")  # no permits: not read
    answer = _ack_answer(consumer, MessageIdData(ledgerId=1, entryId=0, batch_index=5,
                                                 batch_size=2_000_000))
    assert answer.ackResponse.error == ServerError.NotAllowedError
    assert "batch index 5 in a batch of 1" in answer.ackResponse.message
    answer = _ack_answer(consumer, MessageIdData(ledgerId=1, entryId=0, ack_set=[-1] * 4096))
    assert answer.ackResponse.error == ServerError.NotAllowedError
    assert memory_broker.backlog(TOPIC, "batch-size") == 1


@pytest.mark.parametrize("ledger, entry", [(U64_MAX, 0), (1, 10**6), (2**62, 0)],
                         ids=["earliest-id", "far-entry", "far-ledger"])
def test_a_cumulative_ack_past_the_last_message_moves_nothing(
        memory_broker: MemoryBroker, ledger: int, entry: int) -> None:
    """Once such an ACK moved the mark-delete past every later message: they never
    arrived, and the backlog said 0."""
    topic = f"{TOPIC}-cumulative-{ledger}-{entry}"
    _published(memory_broker, topic, 3)
    consumer = RawConsumer(memory_broker.url, topic, "far")
    answer = _ack_answer(consumer, MessageIdData(ledgerId=ledger, entryId=entry),
                         cumulative=True)
    assert answer.ackResponse.error == ServerError.NotAllowedError
    _published(memory_broker, topic, 2)
    assert memory_broker.backlog(topic, "far") == 5
    consumer.flow(10)
    messages = consumer.collect(1.0)
    assert [c.message.message_id.entryId for c in messages] == [0, 1, 2, 3, 4]


def test_a_send_whose_batch_does_not_fit_its_payload_is_refused_and_key_shared_goes_on(
        memory_broker: MemoryBroker, client: pulsar.Client) -> None:
    """Stored, such an entry stalled a Key_Shared subscription for good."""
    topic = f"{TOPIC}-garbage-batch"
    consumer = client.subscribe(topic, "keyed", consumer_type=pulsar.ConsumerType.KeyShared)
    raw = RawProducer(memory_broker.url, topic)
    raw.send(0, b"not a batch of a thousand", num_messages_in_batch=1000)
    (refused,) = raw.collect(1.0)
    assert refused.type == BaseCommand.SEND_ERROR
    assert refused.send_error.error == ServerError.MetadataError
    raw.send(1, b"the producer is still open")
    (receipt,) = raw.collect(1.0)
    assert receipt.type == BaseCommand.SEND_RECEIPT
    producer = client.create_producer(topic, batching_enabled=True)
    producer.send(b"keyed", partition_key="k")
    received = [consumer.receive(timeout_millis=5000).data() for _ in range(2)]
    assert received == [b"the producer is still open", b"keyed"]


def test_a_send_failing_its_checksum_gets_checksum_error(memory_broker: MemoryBroker) -> None:
    raw = RawProducer(memory_broker.url, f"{TOPIC}-checksum")
    metadata = MessageMetadata(producer_name=raw.name, sequence_id=0, publish_time=1)
    frame = bytearray(encode_command(
        BaseCommand(type=BaseCommand.SEND, send=CommandSend(producer_id=1, sequence_id=0)),
        encode_entry(metadata, b"payload")))
    frame[-1] ^= 0x55
    raw.send_bytes(bytes(frame))
    (refused,) = raw.collect(1.0)
    assert refused.type == BaseCommand.SEND_ERROR
    assert refused.send_error.error == ServerError.ChecksumError
    assert not raw.closed


@pytest.fixture
def two_per_address() -> Iterator[MemoryBroker]:
    with serving(limits=ConnectionLimits(max_connections_per_ip=2)) as broker:
        yield broker


def test_connections_beyond_the_per_address_limit_are_closed_at_accept(
        two_per_address: MemoryBroker, caplog: pytest.LogCaptureFixture) -> None:
    first, _second = RawConnection(two_per_address.url), RawConnection(two_per_address.url)
    with caplog.at_level(logging.WARNING), pytest.raises((TimeoutError, ConnectionError)):
        RawConnection(two_per_address.url, timeout=2.0)
    refusals = [r for r in caplog.records if "refused a connection" in r.getMessage()]
    assert len(refusals) == 1 and "brokerMaxConnectionsPerIp" in refusals[0].getMessage()
    first.close()
    deadline = time.monotonic() + 5
    while True:  # the broker notices the close on its own time
        try:
            RawConnection(two_per_address.url, timeout=1.0)
            break
        except (TimeoutError, ConnectionError):
            assert time.monotonic() < deadline


def test_a_cumulative_ack_without_a_message_id_is_refused_in_one_line(
        memory_broker: MemoryBroker, caplog: pytest.LogCaptureFixture) -> None:
    """It used to fail inside the broker with an IndexError traceback."""
    consumer = RawConsumer(memory_broker.url, f"{TOPIC}-no-id", "empty")
    frame = BaseCommand(type=BaseCommand.ACK)
    frame.ack.consumer_id, frame.ack.ack_type, frame.ack.request_id = 1, 1, 4
    with caplog.at_level(logging.INFO):
        consumer.send_bytes(encode_command(frame))
        (answer,) = consumer.collect(1.0)
    assert answer.ackResponse.error == ServerError.NotAllowedError
    assert not any(r.exc_info for r in caplog.records)


def test_the_official_client_still_works_beside_a_refused_client(
        memory_broker: MemoryBroker) -> None:
    client = official_client(memory_broker.url)
    try:
        producer = client.create_producer(f"{TOPIC}-beside")
        consumer = client.subscribe(f"{TOPIC}-beside", "s")
        raw = RawProducer(memory_broker.url, f"{TOPIC}-beside", name="raw")
        raw.send(0, b"junk", num_messages_in_batch=7)
        producer.send(b"fine")
        assert consumer.receive(timeout_millis=5000).data() == b"fine"
    finally:
        client.close()


@pytest.fixture
def ten_pending() -> Iterator[MemoryBroker]:
    with serving(limits=ConnectionLimits(max_pending_publish_requests=10)) as broker:
        yield broker


def test_a_connection_with_too_many_unanswered_sends_is_not_read_until_they_are_answered(
        ten_pending: MemoryBroker) -> None:
    """A client that never waits for receipts cannot make the broker hold its sends
    without end (maxPendingPublishRequestsPerConnection)."""
    topic = f"{TOPIC}-pending"
    raw = RawProducer(ten_pending.url, topic)

    async def hold_writes(held: bool) -> None:
        flow = ten_pending.ledger(topic).writes_flow
        flow.clear() if held else flow.set()

    ten_pending.run(hold_writes(True))
    for n in range(30):
        raw.send(n, b"x")
    time.sleep(0.5)
    raw.send_bytes(encode_command(BaseCommand(type=BaseCommand.PING, ping=CommandPing())))
    assert raw.collect(1.0) == []  # not even the PONG: the broker stopped reading
    ten_pending.run(hold_writes(False))
    answers = [c.type for c in raw.collect(2.0)]
    assert answers.count(BaseCommand.SEND_RECEIPT) == 30 and BaseCommand.PONG in answers


def test_compressed_batches_of_the_official_client_pass_validation_and_key_shared(
        client: pulsar.Client) -> None:
    """The broker opens no compressed batch, yet checks its count against its
    uncompressed size: what the official client sends must pass."""
    topic = f"{TOPIC}-compressed"
    consumer = client.subscribe(topic, "keyed", consumer_type=pulsar.ConsumerType.KeyShared)
    producer = client.create_producer(topic, compression_type=pulsar.CompressionType.LZ4,
                                      batching_enabled=True, batching_max_publish_delay_ms=50)
    for n in range(40):
        producer.send_async(f"{n}".encode(), None, partition_key="same")
    producer.flush()
    received = [consumer.receive(timeout_millis=5000).data() for _ in range(40)]
    assert received == [f"{n}".encode() for n in range(40)]


def test_chunked_and_compressed_messages_of_the_official_client_pass_validation(
        client: pulsar.Client) -> None:
    """Every chunk carries the four chunk fields and the whole message's uncompressed
    size, which may exceed the largest message: what the official client sends must pass."""
    topic = f"{TOPIC}-chunked"
    consumer = client.subscribe(topic, "chunks")
    producer = client.create_producer(topic, chunking_enabled=True, batching_enabled=False,
                                      compression_type=pulsar.CompressionType.LZ4)
    large = random.Random(7).randbytes(6 * 1024 * 1024)  # incompressible: two chunks
    producer.send(large)
    producer.send(b"small")
    assert consumer.receive(timeout_millis=10_000).data() == large
    assert consumer.receive(timeout_millis=5000).data() == b"small"


UNREADABLE = {
    "garbage": b"\x00\x00\x00\x09not protobuf at all",
    "lz4-without-size": encode_entry(MessageMetadata(
        producer_name="p", sequence_id=1, publish_time=1, compression=CompressionType.LZ4),
        b"\x10abc"),
    "chunk-without-uuid": encode_entry(MessageMetadata(
        producer_name="p", sequence_id=2, publish_time=1, num_chunks_from_msg=2,
        total_chunk_msg_size=8, chunk_id=0), b"half"),
}


def test_an_entry_stored_past_the_broker_is_skipped_and_the_consumer_gets_the_next(
        memory_broker: MemoryBroker, client: pulsar.Client,
        caplog: pytest.LogCaptureFixture) -> None:
    """Written straight into storage (a bookie takes any client's writes), such entries
    once stopped a topic for good: the broker retried the one it could not parse for
    ever, and the official client crashed on the others. Each is now acknowledged,
    logged by its position and counted, and consumers get the next good message."""
    topic = f"{TOPIC}-unreadable"
    consumer = client.subscribe(topic, "reader", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"before")
    assert consumer.receive(timeout_millis=5000).data() == b"before"
    ledger = memory_broker.ledger(topic)
    with caplog.at_level(logging.WARNING, logger="impl.broker.subscription"):
        stored = [memory_broker.run(ledger.add_entry(data)) for data in UNREADABLE.values()]
        producer.send(b"after")
        assert consumer.receive(timeout_millis=5000).data() == b"after"
    skipped = [r.getMessage() for r in caplog.records if "unreadable entry" in r.getMessage()]
    assert [next(m for m in skipped if f" {position}: " in m) for position in stored]
    stats = memory_broker.topic_stats(topic)["subscriptions"]["reader"]
    assert stats["unreadableEntriesSkipped"] == len(UNREADABLE)
    assert memory_broker.backlog(topic, "reader") == 2  # both received, neither acknowledged


def test_a_compressed_send_without_its_uncompressed_size_is_refused_and_not_stored(
        memory_broker: MemoryBroker) -> None:
    topic = f"{TOPIC}-lz4-without-size"
    raw = RawProducer(memory_broker.url, topic)
    frame = encode_command(
        BaseCommand(type=BaseCommand.SEND, send=CommandSend(producer_id=1, sequence_id=1)),
        UNREADABLE["lz4-without-size"])
    raw.send_bytes(frame)
    (refused,) = raw.collect(1.0)
    assert refused.type == BaseCommand.SEND_ERROR
    assert refused.send_error.error == ServerError.MetadataError
    assert "without its uncompressed size" in refused.send_error.message
    assert memory_broker.ledger(topic).entries == []


def _silent_connection(url: str) -> socket.socket:
    """A connection that never sends CONNECT (it may still PING)."""
    address = urlsplit(url)
    return socket.create_connection((address.hostname, address.port), timeout=5)


def _closed_by_broker(sock: socket.socket, within: float) -> bool:
    sock.settimeout(within)
    try:
        while sock.recv(4096):  # a PONG, or the broker's PING
            pass
        return True
    except ConnectionError:
        return True
    except TimeoutError:
        return False


def test_a_connection_without_an_accepted_connect_is_closed_after_the_timeout(
        caplog: pytest.LogCaptureFixture) -> None:
    """Keep-alive alone kept it for good, as long as it answered PINGs."""
    with serving(limits=ConnectionLimits(connect_timeout_s=0.5)) as broker:
        silent = _silent_connection(broker.url)
        silent.sendall(encode_command(BaseCommand(type=BaseCommand.PING, ping=CommandPing())))
        speaker = RawConnection(broker.url)
        with caplog.at_level(logging.WARNING):
            assert _closed_by_broker(silent, within=3.0)
        assert any("no CONNECT accepted within" in r.getMessage() for r in caplog.records)
        speaker.send_bytes(encode_command(BaseCommand(type=BaseCommand.PING, ping=CommandPing())))
        assert [c.type for c in speaker.collect(1.0)] == [BaseCommand.PONG]


def test_silent_connections_from_one_address_cannot_lock_out_a_client_that_speaks() -> None:
    """They once filled the per-address limit, and the address's real clients were
    refused at accept; now at most `max_unconnected_per_ip` of them stay."""
    limits = ConnectionLimits(max_connections_per_ip=10, max_unconnected_per_ip=3)
    with serving(limits=limits) as broker:
        silent = [_silent_connection(broker.url) for _ in range(20)]
        client = official_client(broker.url)
        try:
            producer = client.create_producer(f"{TOPIC}-beside-silent")
            producer.send(b"through")
        finally:
            client.close()
        still_open = [s for s in silent if not _closed_by_broker(s, within=0.2)]
        assert len(still_open) <= 3


def test_the_memory_of_frames_cut_off_by_a_close_is_returned() -> None:
    """40 half-sent 5 MiB frames kept about 130 MiB resident after their connections
    closed: the buffers waited for the cycle collector, and glibc kept what they freed."""
    done = subprocess.run([sys.executable, "-m", "tests.broker.half_sent_frames"],
                          cwd=REPO, capture_output=True, text=True, timeout=60, check=True)
    resident = json.loads(done.stdout.strip().splitlines()[-1])
    assert resident["held"] - resident["before"] > 50, resident  # the frames were held
    assert resident["after"] - resident["before"] < 50, resident
