"""Clients that speak the binary protocol frame by frame, for what the official client
hides: sending into a paused broker's socket and seeing exactly which writes got a receipt,
or counting the MESSAGE frames a consumer gets for its permits. Built on our codec
(wire/frames.py), which the official client already agrees with.
"""

from __future__ import annotations

import socket
import struct
import time
from urllib.parse import urlsplit

from wire.frames import FrameDecoder, MalformedFrame, encode_command, encode_entry
from wire.pulsar_api_pb2 import (
    BaseCommand,
    CommandAck,
    CommandConnect,
    CommandFlow,
    CommandPong,
    CommandProducer,
    CommandSend,
    CommandSubscribe,
    MessageIdData,
    MessageMetadata,
)

PRODUCER_ID = 1
CONSUMER_ID = 1


class RawConnection:
    """One connected socket: CONNECT done, PINGs answered, everything else collected."""

    def __init__(self, service_url: str, timeout: float = 10.0,
                 client_version: str = "starquake-raw") -> None:
        address = urlsplit(service_url)
        self._sock = socket.create_connection((address.hostname, address.port), timeout=timeout)
        self._decoder = FrameDecoder()
        self._pending: list[BaseCommand] = []
        self.closed = False
        self._send(BaseCommand(type=BaseCommand.CONNECT, connect=CommandConnect(
            client_version=client_version, protocol_version=19)))
        self._expect_any((BaseCommand.CONNECTED,), timeout)

    def collect(self, seconds: float) -> list[BaseCommand]:
        """Every command the broker sends within `seconds` (less if it closes the
        connection): receipts, send errors, MESSAGE, CLOSE_PRODUCER..."""
        deadline = time.monotonic() + seconds
        while not self.closed and (left := deadline - time.monotonic()) > 0:
            self._read(left)
        received, self._pending = self._pending, []
        return received

    def close(self) -> None:
        self._sock.close()

    def send_bytes(self, data: bytes) -> None:
        """Write any bytes (a frame our codec would refuse to build, say); what comes back
        is for `collect`."""
        self._sock.sendall(data)

    def _send(self, command: BaseCommand) -> None:
        self._sock.sendall(encode_command(command))

    def _read(self, timeout: float) -> None:
        self._sock.settimeout(max(timeout, 0.01))
        try:
            data = self._sock.recv(65536)
        except TimeoutError:
            return
        except OSError:
            self.closed = True
            return
        if not data:
            self.closed = True
            return
        try:
            frames = self._decoder.feed(data)
        except MalformedFrame:
            self.closed = True
            return
        for frame in frames:
            if frame.command.type == BaseCommand.PING:
                self._send(BaseCommand(type=BaseCommand.PONG, pong=CommandPong()))
            else:
                self._pending.append(frame.command)

    def _expect_any(self, kinds: tuple[int, ...], timeout: float) -> BaseCommand:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.closed:
            for command in self._pending:
                if command.type in kinds:
                    self._pending.remove(command)
                    return command
            self._read(deadline - time.monotonic())
        raise TimeoutError(f"no {[BaseCommand.Type.Name(k) for k in kinds]} within {timeout} s")

    def _request(self, command: BaseCommand, success: int, timeout: float) -> None:
        self._send(command)
        reply = self._expect_any((success, BaseCommand.ERROR), timeout)
        if reply.type == BaseCommand.ERROR:
            raise ConnectionError(f"refused: {reply.error.message}")


class RawProducer(RawConnection):
    def __init__(self, service_url: str, topic: str, name: str = "raw-producer",
                 timeout: float = 10.0) -> None:
        super().__init__(service_url, timeout)
        self.name = name
        self._request(BaseCommand(type=BaseCommand.PRODUCER, producer=CommandProducer(
            topic=topic, producer_id=PRODUCER_ID, request_id=1, producer_name=name)),
            BaseCommand.PRODUCER_SUCCESS, timeout)

    def send(self, sequence_id: int, payload: bytes, highest_sequence_id: int = 0,
             num_messages_in_batch: int | None = None) -> None:
        """Write one SEND frame (no waiting: the broker may be paused). A
        `highest_sequence_id` makes it stand for a batch of sequence ids up to that one,
        as the Java client marks its batches; `num_messages_in_batch` declares a batch
        (whose payload the caller builds, or fakes)."""
        metadata = MessageMetadata(producer_name=self.name, sequence_id=sequence_id,
                                   publish_time=int(time.time() * 1000),
                                   highest_sequence_id=highest_sequence_id)
        if num_messages_in_batch is not None:
            metadata.num_messages_in_batch = num_messages_in_batch
        command = BaseCommand(type=BaseCommand.SEND, send=CommandSend(
            producer_id=PRODUCER_ID, sequence_id=sequence_id, num_messages=1,
            highest_sequence_id=highest_sequence_id))
        self._sock.sendall(encode_command(command, encode_entry(metadata, payload)))


class RawConsumer(RawConnection):
    def __init__(self, service_url: str, topic: str, subscription: str,
                 timeout: float = 10.0) -> None:
        super().__init__(service_url, timeout)
        self._request(BaseCommand(type=BaseCommand.SUBSCRIBE, subscribe=CommandSubscribe(
            topic=topic, subscription=subscription, subType=CommandSubscribe.Exclusive,
            consumer_id=CONSUMER_ID, request_id=1, initialPosition=CommandSubscribe.Earliest)),
            BaseCommand.SUCCESS, timeout)

    def flow(self, permits: int) -> None:
        self._send(BaseCommand(type=BaseCommand.FLOW, flow=CommandFlow(
            consumer_id=CONSUMER_ID, messagePermits=permits)))

    def acknowledge(self, message_id: MessageIdData, request_id: int | None = None,
                    cumulative: bool = False) -> None:
        ack = CommandAck(consumer_id=CONSUMER_ID,
                         ack_type=CommandAck.Cumulative if cumulative else CommandAck.Individual,
                         message_id=[message_id])
        if request_id is not None:
            ack.request_id = request_id
        self._send(BaseCommand(type=BaseCommand.ACK, ack=ack))


JUNK = (b"\xff" * 64,                                     # a frame size beyond any limit
        struct.pack(">II", 100, 90) + b"\x00" * 100,       # a command that is no protobuf
        struct.pack(">I", 50) + b"\x01\x02")               # a frame cut short
"""Bytes no broker may take for a frame: garbage, an unreadable command, a truncated frame."""


def send_junk(service_url: str, junk: bytes, timeout: float = 5.0) -> bytes:
    """Send `junk` on a fresh connection, end our side, and return what the broker sent
    back before closing (nothing, for a broker that refuses the bytes)."""
    address = urlsplit(service_url)
    with socket.create_connection((address.hostname, address.port), timeout=timeout) as sock:
        sock.sendall(junk)
        sock.shutdown(socket.SHUT_WR)
        sock.settimeout(timeout)
        return sock.recv(100)
