"""The frame codec: round trips, streaming reassembly, and refusal of bad bytes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from wire.frames import (
    Frame,
    FrameDecoder,
    MalformedFrame,
    encode_command,
    encode_entry,
    split_batch,
    split_entry,
)
from wire.pulsar_api_pb2 import (
    BaseCommand,
    BrokerEntryMetadata,
    CommandSend,
    CompressionType,
    MessageMetadata,
    ServerError,
    SingleMessageMetadata,
)

REPO = Path(__file__).resolve().parents[2]


def _send(seq: int, payload: bytes = b"hello") -> bytes:
    command = BaseCommand(type=BaseCommand.SEND, send=CommandSend(producer_id=1, sequence_id=seq))
    metadata = MessageMetadata(producer_name="p", sequence_id=seq, publish_time=1,
                               partition_key="k")
    return encode_command(command, encode_entry(metadata, payload))


def test_simple_and_payload_frames_round_trip() -> None:
    ping = encode_command(BaseCommand(type=BaseCommand.PING))
    first, second = FrameDecoder().feed(ping + _send(7, b"x" * 1000))
    assert first.command.type == BaseCommand.PING and first.entry is None
    assert second.command.send.sequence_id == 7
    assert second.metadata().partition_key == "k"
    assert second.payload() == b"x" * 1000


def test_frames_split_anywhere_are_reassembled() -> None:
    stream = b"".join(_send(n) for n in range(20))
    decoder = FrameDecoder()
    frames = [f for i in range(len(stream)) for f in decoder.feed(stream[i:i + 1])]
    assert [f.command.send.sequence_id for f in frames] == list(range(20))
    assert decoder.pending == 0


def test_truncated_frame_waits_for_the_rest() -> None:
    frame = _send(1)
    decoder = FrameDecoder()
    assert decoder.feed(frame[:-3]) == []
    assert decoder.pending == len(frame) - 3
    assert len(decoder.feed(frame[-3:])) == 1


def test_corrupted_send_is_refused_with_checksum_error() -> None:
    """A SEND whose payload fails its checksum is still a sound frame: the broker answers
    it with ChecksumError rather than dropping the connection."""
    frame = bytearray(_send(1))
    frame[-1] ^= 0xFF
    (decoded,) = FrameDecoder().feed(bytes(frame))
    assert decoded.entry is None and decoded.refused is not None
    assert decoded.refused.error == ServerError.ChecksumError
    assert "checksum mismatch" in str(decoded.refused)


@pytest.mark.parametrize("garbage", [
    b"\xff\xff\xff\xff",                      # larger than any frame may be
    b"\x00\x00\x00\x02ab",                     # smaller than its own command size field
    b"\x00\x00\x00\x08\x00\x00\x00\x09abcd",   # command size past the frame's end
    b"\x00\x00\x00\x08\x00\x00\x00\x04\xff\xff\xff\xff",  # not a BaseCommand
])
def test_garbage_is_refused(garbage: bytes) -> None:
    with pytest.raises(MalformedFrame):
        FrameDecoder().feed(garbage)


def test_max_frame_size_is_enforced() -> None:
    with pytest.raises(MalformedFrame, match="outside"):
        FrameDecoder(max_frame_size=1024).feed(_send(1, b"y" * 2048))


def test_broker_entry_metadata_is_skipped() -> None:
    plain = _send(3)
    command_size = int.from_bytes(plain[4:8], "big")
    head, tail = plain[:8 + command_size], plain[8 + command_size:]
    extra = BrokerEntryMetadata(broker_timestamp=5, index=9).SerializeToString()
    inserted = b"\x0e\x02" + len(extra).to_bytes(4, "big") + extra
    body = head[4:] + inserted + tail
    (frame,) = FrameDecoder().feed(len(body).to_bytes(4, "big") + body)
    assert frame.command.send.sequence_id == 3 and frame.payload() == b"hello"


def test_batch_payload_splits_into_messages() -> None:
    parts = []
    for key, data in (("a", b"one"), ("b", b"two!")):
        single = SingleMessageMetadata(partition_key=key, payload_size=len(data))
        raw = single.SerializeToString()
        parts.append(len(raw).to_bytes(4, "big") + raw + data)
    metadata = MessageMetadata(producer_name="p", sequence_id=0, publish_time=1,
                               num_messages_in_batch=2)
    entry = encode_entry(metadata, b"".join(parts))
    decoded, payload = split_entry(entry)
    messages = split_batch(decoded, payload)
    assert [(m.partition_key, d) for m, d in messages] == [("a", b"one"), ("b", b"two!")]
    with pytest.raises(MalformedFrame):
        split_batch(decoded, payload[:-2])


def test_send_whose_batch_overruns_its_payload_is_refused_with_metadata_error() -> None:
    """What stalled a Key_Shared subscription for good once stored: a batch announcing
    more messages than its payload holds."""
    command = BaseCommand(type=BaseCommand.SEND, send=CommandSend(producer_id=1, sequence_id=0))
    metadata = MessageMetadata(producer_name="p", sequence_id=0, publish_time=1,
                               num_messages_in_batch=1000)
    (decoded,) = FrameDecoder().feed(encode_command(command, encode_entry(metadata, b"junk")))
    assert decoded.refused is not None and decoded.refused.error == ServerError.MetadataError


def test_compressed_batch_announcing_more_than_its_size_holds_is_refused() -> None:
    """A compressed batch is not opened by the broker, but its count still bounds what the
    broker builds for it when it is acknowledged in parts."""
    command = BaseCommand(type=BaseCommand.SEND, send=CommandSend(producer_id=1, sequence_id=0))
    for count, size in ((2**31 - 1, 100), (10, 2**31), (0, 100)):
        metadata = MessageMetadata(producer_name="p", sequence_id=0, publish_time=1,
                                   compression=CompressionType.LZ4, uncompressed_size=size,
                                   num_messages_in_batch=count)
        (decoded,) = FrameDecoder().feed(encode_command(command,
                                                        encode_entry(metadata, b"junk")))
        assert decoded.refused is not None, (count, size)
        assert decoded.refused.error == ServerError.MetadataError


def _decoded_send(**fields: object) -> Frame:
    command = BaseCommand(type=BaseCommand.SEND, send=CommandSend(producer_id=1, sequence_id=0))
    metadata = MessageMetadata(producer_name="p", sequence_id=0, publish_time=1, **fields)
    (decoded,) = FrameDecoder().feed(encode_command(command, encode_entry(metadata, b"junk")))
    return decoded


CHUNK = {"uuid": "p-0", "num_chunks_from_msg": 2, "total_chunk_msg_size": 10, "chunk_id": 0}


@pytest.mark.parametrize("fields", [
    {"compression": CompressionType.LZ4},
    {"compression": CompressionType.ZSTD, "uncompressed_size": 2**32 - 1},
    {"num_chunks_from_msg": 3},
    {**CHUNK, "uuid": ""},
    {**CHUNK, "chunk_id": 2},
    {**CHUNK, "chunk_id": -1},
    {**CHUNK, "total_chunk_msg_size": 3},
    {**CHUNK, "total_chunk_msg_size": 2**31 - 1},
    {**CHUNK, "num_messages_in_batch": 5},
], ids=["lz4-without-size", "zstd-of-4-gib", "chunk-count-alone", "chunk-without-uuid",
        "chunk-id-past-count", "negative-chunk-id", "chunk-larger-than-total",
        "total-past-its-chunks", "chunked-batch"])
def test_metadata_the_official_client_cannot_decode_is_refused(fields: dict[str, object]
                                                               ) -> None:
    """Stored, the first two made the official client crash on every later read of the
    topic: a compressed payload without its uncompressed size, a chunk without its uuid."""
    decoded = _decoded_send(**fields)
    assert decoded.refused is not None and decoded.refused.error == ServerError.MetadataError


@pytest.mark.parametrize("fields", [
    CHUNK, {**CHUNK, "chunk_id": 1},
    {"compression": CompressionType.LZ4, "uncompressed_size": 4},
    {**CHUNK, "compression": CompressionType.LZ4, "uncompressed_size": 2**31},
], ids=["first-chunk", "last-chunk", "lz4", "compressed-chunk-of-a-large-message"])
def test_complete_chunks_and_compressed_messages_are_stored(fields: dict[str, object]) -> None:
    decoded = _decoded_send(**fields)
    assert decoded.refused is None and decoded.entry is not None


def test_encoding_an_incomplete_command_is_our_bug() -> None:
    with pytest.raises(ValueError, match="incomplete SEND"):
        encode_command(BaseCommand(type=BaseCommand.SEND, send=CommandSend(producer_id=1)))


@pytest.mark.parametrize("name", ["pulsar_api_pb2.py", "pulsar_api_pb2.pyi"])
def test_generated_module_and_stub_match_the_proto(tmp_path: Path, name: str) -> None:
    subprocess.run(["bash", str(REPO / "scripts" / "gen_proto.sh"), str(tmp_path)], check=True)
    generated = tmp_path / "wire" / name
    committed = REPO / "wire" / name
    assert generated.read_text() == committed.read_text(), \
        f"wire/{name} is stale: run scripts/gen_proto.sh"
