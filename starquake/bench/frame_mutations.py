"""Frames for fuzzing a broker: valid ones of every command a client sends, built with our
codec (wire/frames.py, which the official client agrees with), and the ways to spoil them
that a hostile or broken client would: flipped bits, cut frames, size fields that lie,
protobuf fields nobody defined, counts far beyond anything real, SENDs whose metadata
contradicts itself (compression without its size, chunk fields missing or at odds), and
frames announced large and only half sent.

Everything is drawn from one `random.Random`, so a campaign repeats from its seed.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable

from wire.frames import DEFAULT_MAX_MESSAGE_SIZE, encode_command, encode_entry
from wire.pulsar_api_pb2 import (
    BaseCommand,
    CommandAck,
    CommandConnect,
    CommandFlow,
    CommandGetLastMessageId,
    CommandGetSchema,
    CommandGetTopicsOfNamespace,
    CommandLookupTopic,
    CommandPartitionedTopicMetadata,
    CommandPing,
    CommandProducer,
    CommandRedeliverUnacknowledgedMessages,
    CommandSeek,
    CommandSend,
    CommandSubscribe,
    CommandUnsubscribe,
    CompressionType,
    MessageIdData,
    MessageMetadata,
    SingleMessageMetadata,
)

PRODUCER_ID = 1
CONSUMER_ID = 1
HUGE = (2**31 - 1, 2**32 - 1, 2**63 - 1, 2**64 - 1, 20_000_000, 10**9)
"""Counts and ids a client could name; none is real."""
_U32 = struct.Struct(">I")


def connect_frame() -> bytes:
    return encode_command(BaseCommand(type=BaseCommand.CONNECT, connect=CommandConnect(
        client_version="starquake-fuzz", protocol_version=19)))


def producer_frame(topic: str) -> bytes:
    return encode_command(BaseCommand(type=BaseCommand.PRODUCER, producer=CommandProducer(
        topic=topic, producer_id=PRODUCER_ID, request_id=1)))


def subscribe_frame(topic: str, subscription: str) -> bytes:
    return encode_command(BaseCommand(type=BaseCommand.SUBSCRIBE, subscribe=CommandSubscribe(
        topic=topic, subscription=subscription, subType=CommandSubscribe.Shared,
        consumer_id=CONSUMER_ID, request_id=1, initialPosition=CommandSubscribe.Earliest)))


def send_frame(sequence_id: int, payload: bytes, batch: int = 0) -> bytes:
    """A SEND of one message, or of a batch of `batch` messages."""
    metadata = MessageMetadata(producer_name="fuzz", sequence_id=sequence_id, publish_time=1)
    if batch:
        metadata.num_messages_in_batch = batch
        parts = []
        for n in range(batch):
            single = SingleMessageMetadata(payload_size=len(payload), partition_key=f"k{n}")
            raw = single.SerializeToString()
            parts.append(_U32.pack(len(raw)) + raw + payload)
        payload = b"".join(parts)
    return encode_command(BaseCommand(type=BaseCommand.SEND, send=CommandSend(
        producer_id=PRODUCER_ID, sequence_id=sequence_id, num_messages=batch or 1)),
        encode_entry(metadata, payload))


def valid_commands(topic: str) -> list[BaseCommand]:
    """One of each command a client sends after CONNECT (SEND aside: it has a payload)."""
    first = MessageIdData(ledgerId=1, entryId=0)
    return [
        BaseCommand(type=BaseCommand.PING, ping=CommandPing()),
        BaseCommand(type=BaseCommand.LOOKUP, lookupTopic=CommandLookupTopic(
            topic=topic, request_id=2)),
        BaseCommand(type=BaseCommand.PARTITIONED_METADATA,
                    partitionMetadata=CommandPartitionedTopicMetadata(topic=topic, request_id=3)),
        BaseCommand(type=BaseCommand.FLOW, flow=CommandFlow(consumer_id=CONSUMER_ID,
                                                            messagePermits=100)),
        BaseCommand(type=BaseCommand.ACK, ack=CommandAck(
            consumer_id=CONSUMER_ID, ack_type=CommandAck.Individual, message_id=[first],
            request_id=4)),
        BaseCommand(type=BaseCommand.ACK, ack=CommandAck(
            consumer_id=CONSUMER_ID, ack_type=CommandAck.Cumulative, message_id=[
                MessageIdData(ledgerId=1, entryId=0, batch_index=1, batch_size=4,
                              ack_set=[0b1100])])),
        BaseCommand(type=BaseCommand.REDELIVER_UNACKNOWLEDGED_MESSAGES,
                    redeliverUnacknowledgedMessages=CommandRedeliverUnacknowledgedMessages(
                        consumer_id=CONSUMER_ID, message_ids=[first])),
        BaseCommand(type=BaseCommand.GET_LAST_MESSAGE_ID, getLastMessageId=(
            CommandGetLastMessageId(consumer_id=CONSUMER_ID, request_id=5))),
        BaseCommand(type=BaseCommand.SEEK, seek=CommandSeek(
            consumer_id=CONSUMER_ID, request_id=6, message_id=first)),
        BaseCommand(type=BaseCommand.GET_SCHEMA, getSchema=CommandGetSchema(
            topic=topic, request_id=7)),
        BaseCommand(type=BaseCommand.GET_TOPICS_OF_NAMESPACE,
                    getTopicsOfNamespace=CommandGetTopicsOfNamespace(
                        namespace="public/default", request_id=8)),
        BaseCommand(type=BaseCommand.UNSUBSCRIBE, unsubscribe=CommandUnsubscribe(
            consumer_id=CONSUMER_ID, request_id=9)),
    ]


def _flip_bits(rng: random.Random, frame: bytes) -> bytes:
    spoiled = bytearray(frame)
    for _ in range(rng.randint(1, 8)):
        spoiled[rng.randrange(len(spoiled))] ^= 1 << rng.randrange(8)
    return bytes(spoiled)


def _truncate(rng: random.Random, frame: bytes) -> bytes:
    """A frame cut short, its size field still claiming the whole: the broker must wait
    for the rest, then take what follows as the rest."""
    return frame[:rng.randrange(1, len(frame))]


def _lie_about_size(rng: random.Random, frame: bytes) -> bytes:
    offset = rng.choice((0, 4)) if len(frame) >= 8 else 0
    claimed = rng.choice((0, 1, 3, 5 * 1024 * 1024 + 10241, 2**31, 2**32 - 1,
                          rng.randrange(2**32)))
    return frame[:offset] + _U32.pack(claimed) + frame[offset + 4:]


def _add_unknown_fields(rng: random.Random, frame: bytes) -> bytes:
    """Fields with numbers our protocol never defined, appended to the command (valid
    protobuf that a parser must skip)."""
    (command_size,) = _U32.unpack_from(frame, 4)
    extra = bytearray()
    for _ in range(rng.randint(1, 4)):
        number = rng.randint(60, 2**20)
        if rng.random() < 0.5:
            extra += _varint(number << 3) + _varint(rng.randrange(2**64))
        else:
            blob = rng.randbytes(rng.randint(0, 64))
            extra += _varint(number << 3 | 2) + _varint(len(blob)) + blob
    body = frame[8:8 + command_size] + bytes(extra)
    rest = frame[8 + command_size:]
    return _U32.pack(4 + len(body) + len(rest)) + _U32.pack(len(body)) + body + rest


def _huge_counts(rng: random.Random, command: BaseCommand) -> BaseCommand:
    """The command with one of its counts, ids or indices as large as a field holds."""
    spoiled = BaseCommand()
    spoiled.CopyFrom(command)
    huge = rng.choice(HUGE)
    kind = spoiled.type
    if kind == BaseCommand.FLOW:
        spoiled.flow.messagePermits = min(huge, 2**32 - 1)
    elif kind == BaseCommand.ACK:
        message = spoiled.ack.message_id[0]
        # A position that may well exist (ledger ids are small in a fresh cluster).
        message.ledgerId, message.entryId = rng.randrange(1, 8), rng.randrange(40)
        field = rng.choice(("ledgerId", "entryId", "batch_index", "batch_size", "ack_set"))
        if field == "ack_set":
            message.ack_set.extend([-1] * rng.choice((64, 4096, 100_000)))
        elif field == "batch_size":  # one message of a batch the client calls huge
            del message.ack_set[:]
            message.batch_index = rng.randrange(4)
            message.batch_size = min(huge, 2**31 - 1)
        elif field == "batch_index":
            message.batch_index = min(huge, 2**31 - 1)
        else:
            setattr(message, field, min(huge, 2**64 - 1))
    elif kind == BaseCommand.REDELIVER_UNACKNOWLEDGED_MESSAGES:
        spoiled.redeliverUnacknowledgedMessages.message_ids.extend(
            MessageIdData(ledgerId=rng.randrange(2**64), entryId=rng.randrange(2**64))
            for _ in range(rng.choice((1, 1000, 50_000))))
    elif kind == BaseCommand.SEEK:
        spoiled.seek.message_id.ledgerId = min(huge, 2**64 - 1)
    else:
        spoiled.ping.SetInParent()
    return spoiled


def _huge_send(rng: random.Random) -> bytes:
    """A SEND whose metadata lies: a batch of millions in a few bytes, or a payload size
    beyond the payload."""
    metadata = MessageMetadata(producer_name="fuzz", sequence_id=rng.randrange(2**63),
                               publish_time=1,
                               num_messages_in_batch=rng.choice((2**31 - 1, 20_000_000, 0)))
    single = SingleMessageMetadata(payload_size=rng.choice((2**31 - 1, 100, 0)))
    raw = single.SerializeToString()
    return encode_command(BaseCommand(type=BaseCommand.SEND, send=CommandSend(
        producer_id=PRODUCER_ID, sequence_id=1, num_messages=rng.randrange(2**31))),
        encode_entry(metadata, _U32.pack(len(raw)) + raw + b"x" * rng.randint(0, 8)))


CHUNK = {"uuid": "fuzz-0", "num_chunks_from_msg": 2, "total_chunk_msg_size": 64,
         "chunk_id": 0}


def _inconsistent_metadata(rng: random.Random) -> MessageMetadata:
    """Metadata that parses but that a consumer could not decode: compression without its
    uncompressed size or with an absurd one, a chunk missing some of its fields or with
    fields at odds with each other, a chunked batch."""
    metadata = MessageMetadata(producer_name="fuzz", sequence_id=rng.randrange(2**63),
                               publish_time=1)
    kind = rng.randrange(6)
    if kind == 0:
        metadata.compression = rng.choice((CompressionType.LZ4, CompressionType.ZLIB,
                                           CompressionType.ZSTD, CompressionType.SNAPPY))
    elif kind == 1:
        metadata.compression = CompressionType.LZ4
        metadata.uncompressed_size = rng.choice((2**32 - 1, DEFAULT_MAX_MESSAGE_SIZE + 1))
    elif kind == 2:  # some of a chunk's fields
        for name in rng.sample(sorted(CHUNK), rng.randint(1, 3)):
            setattr(metadata, name, CHUNK[name])
    else:  # every field, one of them at odds with the rest
        for name, value in CHUNK.items():
            setattr(metadata, name, value)
        wrong = {3: ("chunk_id", rng.choice((2, -1, 2**31 - 1))),
                 4: ("total_chunk_msg_size", rng.choice((0, -5, 2**31 - 1))),
                 5: ("num_messages_in_batch", 7)}[kind]
        setattr(metadata, *wrong)
    return metadata


def _inconsistent_send(rng: random.Random) -> bytes:
    return encode_command(BaseCommand(type=BaseCommand.SEND, send=CommandSend(
        producer_id=PRODUCER_ID, sequence_id=rng.randrange(2**32), num_messages=1)),
        encode_entry(_inconsistent_metadata(rng), rng.randbytes(rng.randint(1, 32))))


HALF_SENT_MAX = 256 * 1024
"""How much of a frame announced at up to the largest size is sent before the connection
moves on (and is closed at the round's end): bounded, so a campaign's traffic stays so."""


def half_sent_frame(rng: random.Random) -> bytes:
    """A frame header announcing up to the largest frame, and only part of its bytes."""
    announced = rng.randint(HALF_SENT_MAX, DEFAULT_MAX_MESSAGE_SIZE)
    return _U32.pack(announced) + bytes(rng.randint(1, HALF_SENT_MAX))


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


MUTATIONS: tuple[Callable[[random.Random, bytes], bytes], ...] = (
    _flip_bits, _truncate, _lie_about_size, _add_unknown_fields)


class FrameFuzzer:
    """Draws frames: mostly spoiled ones, some sound, for one topic."""

    def __init__(self, rng: random.Random, topic: str) -> None:
        self._rng = rng
        self._commands = valid_commands(topic)

    def sound(self) -> bytes:
        rng = self._rng
        if rng.random() < 0.3:
            return send_frame(rng.randrange(2**32), rng.randbytes(rng.randint(0, 64)),
                              batch=rng.choice((0, 0, 3)))
        return encode_command(rng.choice(self._commands))

    def spoiled(self) -> bytes:
        rng = self._rng
        roll = rng.random()
        if roll < 0.15:
            return encode_command(_huge_counts(rng, rng.choice(self._commands)))
        if roll < 0.25:
            return _huge_send(rng)
        if roll < 0.3:
            return rng.randbytes(rng.randint(1, 256))
        if roll < 0.4:
            return _inconsistent_send(rng)
        if roll < 0.41:
            return half_sent_frame(rng)
        return rng.choice(MUTATIONS)(rng, self.sound())
