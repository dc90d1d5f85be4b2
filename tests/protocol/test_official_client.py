"""The official pulsar-client against our codec: a responder that answers only what a
producer needs (no storage, no broker logic) proves that our field numbers, framing and
checksums are the ones the real client speaks, batching included."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pulsar
import pytest

from wire.frames import FrameDecoder, encode_command, split_batch
from wire.pulsar_api_pb2 import (
    BaseCommand,
    CommandConnected,
    CommandLookupTopicResponse,
    CommandPartitionedTopicMetadataResponse,
    CommandPong,
    CommandProducerSuccess,
    CommandSendReceipt,
    CommandSuccess,
    MessageIdData,
)


class Responder:
    """Answers CONNECT, PING, PARTITIONED_METADATA, LOOKUP, PRODUCER, SEND, CLOSE_PRODUCER;
    keeps every stored message's key and payload."""

    def __init__(self) -> None:
        self.received: list[tuple[str, bytes]] = []
        self.entries = 0
        self.url = ""

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        decoder = FrameDecoder()
        while data := await reader.read(65536):
            for frame in decoder.feed(data):
                reply = self.answer(frame)
                if reply is not None:
                    writer.write(encode_command(reply))
            await writer.drain()
        writer.close()

    def answer(self, frame) -> BaseCommand | None:
        c = frame.command
        if c.type == BaseCommand.CONNECT:
            return BaseCommand(type=BaseCommand.CONNECTED, connected=CommandConnected(
                server_version="starquake-test",
                protocol_version=min(c.connect.protocol_version, 19),
                max_message_size=5 * 1024 * 1024))
        if c.type == BaseCommand.PING:
            return BaseCommand(type=BaseCommand.PONG, pong=CommandPong())
        if c.type == BaseCommand.PARTITIONED_METADATA:
            return BaseCommand(
                type=BaseCommand.PARTITIONED_METADATA_RESPONSE,
                partitionMetadataResponse=CommandPartitionedTopicMetadataResponse(
                    request_id=c.partitionMetadata.request_id, partitions=0,
                    response=CommandPartitionedTopicMetadataResponse.Success))
        if c.type == BaseCommand.LOOKUP:
            return BaseCommand(type=BaseCommand.LOOKUP_RESPONSE,
                               lookupTopicResponse=CommandLookupTopicResponse(
                                   request_id=c.lookupTopic.request_id, brokerServiceUrl=self.url,
                                   response=CommandLookupTopicResponse.Connect,
                                   authoritative=True))
        if c.type == BaseCommand.PRODUCER:
            return BaseCommand(type=BaseCommand.PRODUCER_SUCCESS,
                               producer_success=CommandProducerSuccess(
                                   request_id=c.producer.request_id, producer_name="responder-0",
                                   last_sequence_id=-1, producer_ready=True))
        if c.type == BaseCommand.SEND:
            metadata = frame.metadata()
            for single, data in split_batch(metadata, frame.payload()):
                self.received.append((single.partition_key, data))
            self.entries += 1
            return BaseCommand(type=BaseCommand.SEND_RECEIPT, send_receipt=CommandSendReceipt(
                producer_id=c.send.producer_id, sequence_id=c.send.sequence_id,
                message_id=MessageIdData(ledgerId=1, entryId=self.entries - 1)))
        if c.type == BaseCommand.CLOSE_PRODUCER:
            return BaseCommand(type=BaseCommand.SUCCESS, success=CommandSuccess(
                request_id=c.close_producer.request_id))
        return None


@pytest.fixture
def responder() -> Iterator[Responder]:
    responder = Responder()
    loop = asyncio.new_event_loop()
    started = threading.Event()

    stop = asyncio.Event()

    async def main() -> None:
        server = await asyncio.start_server(responder.serve, "127.0.0.1", 0)
        responder.url = f"pulsar://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        started.set()
        async with server:
            await stop.wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
    thread.start()
    assert started.wait(10)
    yield responder
    loop.call_soon_threadsafe(stop.set)
    thread.join(10)
    loop.close()


@pytest.mark.parametrize("batching", [False, True])
def test_official_producer_speaks_our_protocol(responder: Responder, batching: bool) -> None:
    client = pulsar.Client(responder.url, operation_timeout_seconds=10,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producer = client.create_producer(
            "persistent://t/ns/codec", batching_enabled=batching, batching_max_messages=50,
            batching_max_publish_delay_ms=5)
        sent = [(f"key-{n % 7}", f"message {n}".encode()) for n in range(300)]
        for key, data in sent:
            producer.send_async(data, None, partition_key=key)
        producer.flush()
        producer.close()
    finally:
        client.close()
    assert responder.received == sent
    if batching:
        assert responder.entries < len(sent)  # several messages per stored entry
    else:
        assert responder.entries == len(sent)
