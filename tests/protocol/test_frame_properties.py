"""Properties of the frame codec (wire/frames.py) over generated input: what is encoded
decodes to the same, however the stream is cut; and no bytes at all, however hostile,
make it raise anything but MalformedFrame, the one error the broker answers by closing
the connection."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from wire.frames import (
    FrameDecoder,
    MalformedFrame,
    encode_command,
    encode_entry,
    split_batch,
    split_entry,
)
from wire.pulsar_api_pb2 import BaseCommand, CommandSend, MessageMetadata

U64 = st.integers(0, 2**64 - 1)
PAYLOADS = st.binary(max_size=512)


@st.composite
def sends(draw: st.DrawFn) -> tuple[BaseCommand, bytes]:
    command = BaseCommand(type=BaseCommand.SEND, send=CommandSend(
        producer_id=draw(U64), sequence_id=draw(U64),
        num_messages=draw(st.integers(1, 2**31 - 1))))
    metadata = MessageMetadata(producer_name=draw(st.text(max_size=20)), sequence_id=draw(U64),
                               publish_time=draw(U64))
    if key := draw(st.text(max_size=20)):
        metadata.partition_key = key
    return command, encode_entry(metadata, draw(PAYLOADS))


@given(st.lists(sends(), min_size=1, max_size=5), st.lists(st.integers(1, 64), max_size=8))
def test_frames_round_trip_however_the_stream_is_cut(
        frames: list[tuple[BaseCommand, bytes]], cuts: list[int]) -> None:
    stream = b"".join(encode_command(command, entry) for command, entry in frames)
    decoder, decoded, offset = FrameDecoder(), [], 0
    for cut in [*cuts, len(stream)]:
        decoded += decoder.feed(stream[offset:offset + cut])
        offset += cut
    decoded += decoder.feed(stream[offset:])
    assert [(f.command, f.entry) for f in decoded] == frames
    assert decoder.pending == 0


@settings(max_examples=500)
@given(st.binary(max_size=2048))
def test_any_bytes_decode_or_raise_malformed_frame_only(data: bytes) -> None:
    try:
        FrameDecoder().feed(data)
    except MalformedFrame:
        pass


@settings(max_examples=300)
@given(sends(), st.data())
def test_a_spoiled_frame_decodes_or_raises_malformed_frame_only(
        frame: tuple[BaseCommand, bytes], data: st.DataObject) -> None:
    encoded = bytearray(encode_command(*frame))
    for _ in range(data.draw(st.integers(1, 6))):
        index = data.draw(st.integers(0, len(encoded) - 1))
        encoded[index] = data.draw(st.integers(0, 255))
    try:
        for decoded in FrameDecoder().feed(bytes(encoded)):
            assert decoded.entry is not None or decoded.refused is not None or (
                decoded.command.type != BaseCommand.SEND)
    except MalformedFrame:
        pass


@st.composite
def entries(draw: st.DrawFn) -> bytes:
    """Entry bytes of any shape: noise, or metadata announcing a batch over any payload."""
    if draw(st.booleans()):
        return draw(st.binary(max_size=1024))
    metadata = MessageMetadata(producer_name="p", sequence_id=0, publish_time=1,
                               num_messages_in_batch=draw(st.integers(0, 2**31 - 1)))
    return encode_entry(metadata, draw(PAYLOADS))


@settings(max_examples=300)
@given(entries())
def test_a_send_is_decoded_with_an_entry_consumers_can_split_or_refused(entry: bytes) -> None:
    """What the broker takes in to store is what it can split again when consumers read
    it (Key_Shared routing splits every batch)."""
    send = BaseCommand(type=BaseCommand.SEND, send=CommandSend(producer_id=1, sequence_id=0))
    try:
        (frame,) = FrameDecoder().feed(encode_command(send, entry))
    except MalformedFrame:
        return
    if frame.entry is None:
        return
    metadata, payload = split_entry(frame.entry)
    if not metadata.compression:
        assert len(split_batch(metadata, payload)) >= 1
