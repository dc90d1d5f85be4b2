"""No command before CONNECT: a client that has not connected may keep the socket alive
(PING, PONG) and nothing else. Any other command the protocol's table lists as served or
refused, a second CONNECT too, closes the connection unanswered, as Pulsar's state checks
do, with security off, with authentication alone, and with authorization as well."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pulsar
import pytest
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from impl.naming.topic_name import TopicName
from impl.security.config import SecurityConfig
from impl.security.guard import OPEN_GUARD, Guard
from tests.broker.conftest import MemoryBroker, serving
from tests.broker.test_command_table import table
from tests.security.conftest import SUPERUSER, MemoryPermissions, token
from wire.frames import FrameDecoder, encode_command, encode_entry
from wire.pulsar_api_pb2 import (
    BaseCommand,
    CommandConnect,
    CommandFlow,
    CommandPing,
    CommandProducer,
    CommandSend,
    CommandSubscribe,
    MessageMetadata,
)

TOPIC = "persistent://public/default/before-connect"
ALLOWED = {"CONNECT", "PING", "PONG"}
REQUESTS = sorted(name for name, verdict in table().items()
                  if verdict in ("served", "refused") and name not in ALLOWED)
SETTINGS = ("open", "authentication", "authorization")


@pytest.fixture(scope="module", params=SETTINGS)
def broker(request: pytest.FixtureRequest, secret_key_file: Path) -> Iterator[MemoryBroker]:
    """One broker per security setting; `authentication` is the setting where a role's
    permissions are never asked, so CONNECT is the only gate."""
    guard = OPEN_GUARD
    if request.param != "open":
        guard = Guard(SecurityConfig(
            authentication_enabled=True,
            authorization_enabled=request.param == "authorization",
            token_secret_key=str(secret_key_file), superuser_roles=frozenset({SUPERUSER})),
            MemoryPermissions())
    with serving(guard=guard) as served:
        yield served


def filled(message: Message) -> Message:
    """`message` with every required field set, recursively: a command the broker would
    act on, so only the missing CONNECT can stop it."""
    for field in message.DESCRIPTOR.fields:
        if not field.is_required:
            continue
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            filled(getattr(message, field.name))
        elif field.type == FieldDescriptor.TYPE_STRING:
            setattr(message, field.name, TOPIC if "topic" in field.name.lower() else "x")
        elif field.type == FieldDescriptor.TYPE_BYTES:
            setattr(message, field.name, b"x")
        elif field.type == FieldDescriptor.TYPE_ENUM and field.enum_type is not None:
            setattr(message, field.name, field.enum_type.values[0].number)
        elif field.type == FieldDescriptor.TYPE_BOOL:
            setattr(message, field.name, False)
        else:
            setattr(message, field.name, 1)
    return message


def command_named(name: str) -> BaseCommand:
    command = BaseCommand(type=name)
    filled(getattr(command, BaseCommand.DESCRIPTOR.fields_by_number[command.type].name))
    return command


class Unconnected:
    """A socket to the broker that never sends CONNECT (unless told to)."""

    def __init__(self, url: str) -> None:
        address = urlsplit(url)
        self._sock = socket.create_connection((address.hostname, address.port), timeout=2)
        self._decoder = FrameDecoder()

    def write(self, *frames: bytes) -> None:
        self._sock.sendall(b"".join(frames))

    def answers(self, seconds: float = 2.0) -> tuple[list[BaseCommand], bool]:
        """What the broker sent within `seconds`, and whether it closed the connection."""
        received: list[BaseCommand] = []
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self._sock.settimeout(left)
            try:
                data = self._sock.recv(65536)
            except TimeoutError:
                return received, False
            except ConnectionError:
                return received, True
            if not data:
                return received, True
            received += [frame.command for frame in self._decoder.feed(data)]
        return received, False

    def close(self) -> None:
        self._sock.close()


def connect(credentials: str | None = None) -> bytes:
    command = CommandConnect(client_version="starquake-test", protocol_version=19)
    if credentials is not None:
        command.auth_method_name, command.auth_data = "token", credentials.encode()
    return encode_command(BaseCommand(type=BaseCommand.CONNECT, connect=command))


@pytest.mark.parametrize("name", REQUESTS)
def test_a_command_before_connect_closes_the_connection_unanswered(
        broker: MemoryBroker, name: str) -> None:
    client = Unconnected(broker.url)
    try:
        client.write(encode_command(command_named(name)))
        assert client.answers() == ([], True)
    finally:
        client.close()


def test_ping_before_connect_is_answered_and_connect_still_works(broker: MemoryBroker) -> None:
    client = Unconnected(broker.url)
    try:
        client.write(encode_command(BaseCommand(type=BaseCommand.PING, ping=CommandPing())),
                     connect(token(SUPERUSER)))
        answers, closed = client.answers(1.0)
        assert [a.type for a in answers] == [BaseCommand.PONG, BaseCommand.CONNECTED]
        assert not closed
    finally:
        client.close()


def test_a_second_connect_closes_the_connection(broker: MemoryBroker) -> None:
    client = Unconnected(broker.url)
    try:
        client.write(connect(token(SUPERUSER)), connect(token("someone-else")))
        answers, closed = client.answers()
        assert ([a.type for a in answers], closed) == ([BaseCommand.CONNECTED], True)
    finally:
        client.close()


def _produced(broker: MemoryBroker, topic: str) -> None:
    """One message on `topic` from a producer that connected properly."""
    client = pulsar.Client(broker.url, operation_timeout_seconds=5,
                           authentication=pulsar.AuthenticationToken(token(SUPERUSER)),
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        client.create_producer(topic).send(b"someone else's")
    finally:
        client.close()


def test_an_unconnected_consumer_reads_nothing(broker: MemoryBroker) -> None:
    topic = f"{TOPIC}-read"
    _produced(broker, topic)
    client = Unconnected(broker.url)
    try:
        client.write(
            encode_command(BaseCommand(type=BaseCommand.SUBSCRIBE, subscribe=CommandSubscribe(
                topic=topic, subscription="thief", subType=CommandSubscribe.Exclusive,
                consumer_id=1, request_id=1, initialPosition=CommandSubscribe.Earliest))),
            encode_command(BaseCommand(type=BaseCommand.FLOW, flow=CommandFlow(
                consumer_id=1, messagePermits=100))))
        assert client.answers() == ([], True)
    finally:
        client.close()
    assert "thief" not in broker.ledger(topic).cursors()


def test_an_unconnected_producer_stores_nothing(broker: MemoryBroker) -> None:
    topic = f"{TOPIC}-write"
    client = Unconnected(broker.url)
    entry = encode_entry(MessageMetadata(producer_name="intruder", sequence_id=0,
                                         publish_time=1), b"forged")
    try:
        client.write(
            encode_command(BaseCommand(type=BaseCommand.PRODUCER, producer=CommandProducer(
                topic=topic, producer_id=1, request_id=1, producer_name="intruder"))))
        time.sleep(0.5)  # the PRODUCER's task would have run by now
        with contextlib.suppress(ConnectionError):  # the broker closed it already
            client.write(encode_command(BaseCommand(type=BaseCommand.SEND, send=CommandSend(
                producer_id=1, sequence_id=0)), entry))
        assert client.answers() == ([], True)
    finally:
        client.close()
    stored = broker.ownership.ledgers.get(TopicName.parse(topic))
    assert stored is None or stored.entries == []
