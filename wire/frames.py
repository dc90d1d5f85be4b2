"""Framing of Pulsar's binary protocol: commands in, commands out, checksums verified.

A frame is `[totalSize][commandSize][BaseCommand]`, sizes as big-endian u32, and for SEND
and MESSAGE a payload section follows the command:
`[0x0e02][size][BrokerEntryMetadata]` (optional) `[0x0e01][crc32c][metadataSize]
[MessageMetadata][payload]`. The broker stores the checksummed region
(`[metadataSize][metadata][payload]`, an *entry*) unchanged and sends it back in MESSAGE
frames, so batches travel through storage without being unpacked.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import google_crc32c
from google.protobuf.message import DecodeError, EncodeError, Message

from wire.pulsar_api_pb2 import (
    BaseCommand,
    CompressionType,
    MessageMetadata,
    ServerError,
    SingleMessageMetadata,
)

CHECKSUM_MAGIC = b"\x0e\x01"
BROKER_ENTRY_MAGIC = b"\x0e\x02"
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024
"""Pulsar's default `maxMessageSize`: the largest entry (metadata and payload) a producer
may send, which the broker announces in CONNECTED."""
MESSAGE_SIZE_FRAME_PADDING = 10 * 1024
"""Room for the command, checksum and metadata around an entry of the maximum size
(Pulsar's `Commands.MESSAGE_SIZE_FRAME_PADDING`): a frame limit of the bare message size
would refuse the largest legal message, and every full-size chunk of a chunked one."""
DEFAULT_MAX_FRAME_SIZE = DEFAULT_MAX_MESSAGE_SIZE + MESSAGE_SIZE_FRAME_PADDING
_U32 = struct.Struct(">I")


class MalformedFrame(Exception):
    """Bytes that are not a valid frame; the connection that sent them must be closed."""


class BadEntry(MalformedFrame):
    """A well-framed payload that cannot be stored: its checksum fails, its metadata does
    not parse, or its batch does not fit its payload. `error` is what Pulsar answers such
    a SEND with (ChecksumError or MetadataError)."""

    def __init__(self, error: ServerError, reason: str) -> None:
        super().__init__(reason)
        self.error = error


@dataclass(frozen=True)
class Frame:
    command: BaseCommand
    entry: bytes | None = None
    """For SEND and MESSAGE: `[metadataSize][MessageMetadata][payload]`, checksum verified."""
    refused: BadEntry | None = None
    """For SEND only: why its entry cannot be stored. The frame itself was sound, so the
    connection goes on and the broker answers SEND_ERROR, as Pulsar does."""

    def metadata(self) -> MessageMetadata:
        return split_entry(self._entry())[0]

    def payload(self) -> bytes:
        return split_entry(self._entry())[1]

    def _entry(self) -> bytes:
        if self.entry is None:
            raise ValueError(f"a {BaseCommand.Type.Name(self.command.type)} frame has no payload")
        return self.entry


def encode_command(command: BaseCommand, entry: bytes | None = None) -> bytes:
    """One frame; with `entry`, a payload frame carrying it under a CRC32C checksum."""
    try:
        body = command.SerializeToString()
    except EncodeError as exc:  # a required field left unset: our bug, not the peer's
        raise ValueError(f"incomplete {BaseCommand.Type.Name(command.type)}: {exc}") from exc
    if entry is None:
        return _U32.pack(4 + len(body)) + _U32.pack(len(body)) + body
    checksum = _U32.pack(google_crc32c.value(entry))
    total = 4 + len(body) + len(CHECKSUM_MAGIC) + 4 + len(entry)
    return b"".join((_U32.pack(total), _U32.pack(len(body)), body, CHECKSUM_MAGIC, checksum,
                     entry))


def encode_entry(metadata: MessageMetadata, payload: bytes) -> bytes:
    raw = metadata.SerializeToString()
    return _U32.pack(len(raw)) + raw + payload


def _read_sized(data: bytes, message: Message) -> bytes:
    """Parse `[size][message]` at the start of `data` into `message`; return what follows.
    Every protobuf on the wire is framed this way, so every size check lives here."""
    what = type(message).__name__
    if len(data) < 4:
        raise MalformedFrame(f"{what} size field cut short")
    (size,) = _U32.unpack_from(data)
    if size > len(data) - 4:
        raise MalformedFrame(f"{what} size {size} exceeds the {len(data) - 4} bytes left")
    try:
        message.ParseFromString(data[4:4 + size])
    except DecodeError as exc:
        raise MalformedFrame(f"unreadable {what}: {exc}") from None
    return data[4 + size:]


def split_entry(entry: bytes) -> tuple[MessageMetadata, bytes]:
    """An entry's metadata and payload (for a batch, the payload holds every message)."""
    metadata = MessageMetadata()
    payload = _read_sized(entry, metadata)
    return metadata, payload


def split_batch(metadata: MessageMetadata, payload: bytes) -> list[tuple[SingleMessageMetadata,
                                                                         bytes]]:
    """The messages of an entry: one for a plain message, `num_messages_in_batch` for a batch
    (each `[size][SingleMessageMetadata][data]`). Keys and Key_Shared routing need them."""
    if not metadata.HasField("num_messages_in_batch"):
        single = SingleMessageMetadata(payload_size=len(payload))
        if metadata.HasField("partition_key"):
            single.partition_key = metadata.partition_key
        if metadata.HasField("ordering_key"):
            single.ordering_key = metadata.ordering_key
        return [(single, payload)]
    if metadata.num_messages_in_batch < 1:
        raise MalformedFrame(f"a batch of {metadata.num_messages_in_batch} messages")
    messages, rest = [], payload
    for n in range(metadata.num_messages_in_batch):
        single = SingleMessageMetadata()
        rest = _read_sized(rest, single)
        if single.payload_size > len(rest):
            raise MalformedFrame(f"batch message {n} runs past the payload")
        messages.append((single, rest[:single.payload_size]))
        rest = rest[single.payload_size:]
    return messages


class FrameDecoder:
    """Turns a byte stream into frames. Feed it whatever the socket gave; it keeps partial
    frames until they are complete, and raises `MalformedFrame` as soon as the bytes cannot
    be a frame (oversized, inconsistent sizes, bad checksum, unreadable protobuf)."""

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self.max_frame_size = max_frame_size
        self._buffer = bytearray()

    def feed(self, data: bytes) -> list[Frame]:
        self._buffer += data
        frames = []
        while len(self._buffer) >= 4:
            (total,) = _U32.unpack_from(self._buffer)
            if total < 4 or total > self.max_frame_size:
                raise MalformedFrame(f"frame size {total} outside 4..{self.max_frame_size}")
            if len(self._buffer) < 4 + total:
                break
            frame = bytes(self._buffer[4:4 + total])
            del self._buffer[:4 + total]
            frames.append(_decode(frame))
        return frames

    @property
    def pending(self) -> int:
        """Bytes of an incomplete frame held back (a peer that stops mid-frame)."""
        return len(self._buffer)

    def release(self) -> None:
        """Drop an incomplete frame: its connection is gone."""
        self._buffer = bytearray()


def check_entry(entry: bytes) -> MessageMetadata:
    """The entry's metadata, once the entry is known to be one the broker can serve and the
    official client can decode: the metadata parses; a compressed payload names its
    uncompressed size, which for a whole message is at most the largest message; a chunk
    carries every chunk field, consistently; and the messages a batch announces fit it.
    An uncompressed batch is split to see that they lie within the payload. A compressed
    batch is only opened by consumers, so its count is held to what its uncompressed size
    could hold, at least a 4-byte size field per message. Raises `BadEntry`."""
    try:
        metadata, payload = split_entry(entry)
        _check_chunk(metadata, len(payload))
        if metadata.compression == CompressionType.NONE:
            split_batch(metadata, payload)
        else:
            _check_compressed(metadata)
    except MalformedFrame as exc:
        raise BadEntry(ServerError.MetadataError, str(exc)) from None
    return metadata


CHUNK_FIELDS = ("uuid", "num_chunks_from_msg", "total_chunk_msg_size", "chunk_id")
"""What a chunk of a chunked message carries (PIP-37); a client reassembling chunks reads
all four, and the official one crashed on a chunk that lacked its uuid."""


def _check_chunk(metadata: MessageMetadata, payload_size: int) -> None:
    present = [name for name in CHUNK_FIELDS if metadata.HasField(name)]
    if not present:
        return
    if len(present) < len(CHUNK_FIELDS) or not metadata.uuid:
        missing = sorted(set(CHUNK_FIELDS) - set(present)) or ["uuid"]
        raise MalformedFrame(f"a chunk without {', '.join(missing)}")
    chunks, chunk_id = metadata.num_chunks_from_msg, metadata.chunk_id
    total = metadata.total_chunk_msg_size
    if not 0 <= chunk_id < chunks:
        raise MalformedFrame(f"chunk {chunk_id} of a message in {chunks} chunks")
    if not payload_size <= total <= chunks * DEFAULT_MAX_MESSAGE_SIZE:
        raise MalformedFrame(f"a chunk of {payload_size} bytes of a message of {total} bytes "
                             f"in {chunks} chunks")
    if metadata.num_messages_in_batch > 1:
        raise MalformedFrame("a chunk of a batch")


def _check_compressed(metadata: MessageMetadata) -> None:
    if not metadata.HasField("uncompressed_size"):
        raise MalformedFrame(f"a {CompressionType.Name(metadata.compression)} payload "
                             "without its uncompressed size")
    size, count = metadata.uncompressed_size, metadata.num_messages_in_batch
    if not metadata.HasField("chunk_id") and size > DEFAULT_MAX_MESSAGE_SIZE:
        raise MalformedFrame(f"an uncompressed size of {size} bytes")
    if metadata.HasField("num_messages_in_batch") and not 1 <= count <= size // 4:
        raise MalformedFrame(f"a compressed batch of {count} messages in {size} bytes")


def _decode(frame: bytes) -> Frame:
    command = BaseCommand()
    rest = _read_sized(frame, command)
    if not rest:
        return Frame(command)
    try:
        return Frame(command, _entry_of(rest))
    except BadEntry as exc:
        if command.type != BaseCommand.SEND:
            raise
        return Frame(command, None, exc)


def _entry_of(rest: bytes) -> bytes:
    """The entry after a command: broker entry metadata skipped, checksum verified."""
    if rest.startswith(BROKER_ENTRY_MAGIC):
        if len(rest) < 6:
            raise MalformedFrame("broker entry metadata cut short")
        (meta_size,) = _U32.unpack_from(rest, 2)
        rest = rest[6 + meta_size:]
    if rest.startswith(CHECKSUM_MAGIC):
        if len(rest) < 6:
            raise MalformedFrame("checksum cut short")
        (expected,) = _U32.unpack_from(rest, 2)
        entry = rest[6:]
        actual = google_crc32c.value(entry)
        if actual != expected:
            raise BadEntry(ServerError.ChecksumError,
                           f"checksum mismatch: frame says {expected:#010x}, "
                           f"payload is {actual:#010x}")
    else:
        entry = rest  # clients before protocol v6 send no checksum
    check_entry(entry)  # an unreadable entry is refused here, not when a consumer reads it
    return entry
