"""A producer that speaks the binary protocol frame by frame, for what the official client
hides: sending into a paused broker's socket and seeing exactly which writes got a receipt.
Built on our codec (impl/protocol/frames.py), which the official client already agrees with.
"""

from __future__ import annotations

import socket
import time
from urllib.parse import urlsplit

from impl.protocol.frames import FrameDecoder, MalformedFrame, encode_command, encode_entry
from impl.protocol.pulsar_api_pb2 import (
    BaseCommand,
    CommandConnect,
    CommandPong,
    CommandProducer,
    CommandSend,
    MessageMetadata,
)

PRODUCER_ID = 1


class RawProducer:
    def __init__(self, service_url: str, topic: str, name: str = "raw-producer",
                 timeout: float = 10.0) -> None:
        address = urlsplit(service_url)
        self.name = name
        self._sock = socket.create_connection((address.hostname, address.port), timeout=timeout)
        self._decoder = FrameDecoder()
        self._pending: list[BaseCommand] = []
        self.closed = False
        self._send(BaseCommand(type=BaseCommand.CONNECT, connect=CommandConnect(
            client_version="starquake-raw", protocol_version=19)))
        self._expect(BaseCommand.CONNECTED, timeout)
        self._send(BaseCommand(type=BaseCommand.PRODUCER, producer=CommandProducer(
            topic=topic, producer_id=PRODUCER_ID, request_id=1, producer_name=name)))
        reply = self._expect_any((BaseCommand.PRODUCER_SUCCESS, BaseCommand.ERROR), timeout)
        if reply.type == BaseCommand.ERROR:
            raise ConnectionError(f"producer refused: {reply.error.message}")

    def send(self, sequence_id: int, payload: bytes) -> None:
        """Write one SEND frame (no waiting: the broker may be paused)."""
        metadata = MessageMetadata(producer_name=self.name, sequence_id=sequence_id,
                                   publish_time=int(time.time() * 1000))
        command = BaseCommand(type=BaseCommand.SEND, send=CommandSend(
            producer_id=PRODUCER_ID, sequence_id=sequence_id, num_messages=1))
        self._sock.sendall(encode_command(command, encode_entry(metadata, payload)))

    def collect(self, seconds: float) -> list[BaseCommand]:
        """Every command the broker sends within `seconds` (less if it closes the
        connection): receipts, send errors, CLOSE_PRODUCER..."""
        deadline = time.monotonic() + seconds
        while not self.closed and (left := deadline - time.monotonic()) > 0:
            self._read(left)
        received, self._pending = self._pending, []
        return received

    def close(self) -> None:
        self._sock.close()

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

    def _expect(self, kind: int, timeout: float) -> BaseCommand:
        return self._expect_any((kind,), timeout)

    def _expect_any(self, kinds: tuple[int, ...], timeout: float) -> BaseCommand:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not self.closed:
            for command in self._pending:
                if command.type in kinds:
                    self._pending.remove(command)
                    return command
            self._read(deadline - time.monotonic())
        raise TimeoutError(f"no {[BaseCommand.Type.Name(k) for k in kinds]} within {timeout} s")
