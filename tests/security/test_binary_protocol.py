"""Token authentication and namespace permissions on the binary protocol, with the
official client and the scalable-topics client: what an unauthenticated or unpermitted
client is refused."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pulsar
import pytest

from harness.scalable_client.dag import DagWatcher
from impl.resources import TenantInfo
from impl.security.config import SecurityConfig
from impl.security.guard import Guard
from tests.broker.conftest import MemoryBroker, serving
from tests.security.conftest import (
    SUPERUSER,
    MemoryPermissions,
    scalable_error,
    scalable_lookup,
    scalable_registration,
    token,
)
from wire.connection import ConnectionPool
from wire.errors import NotPermitted
from wire.frames import FrameDecoder, encode_command
from wire.pulsar_api_pb2 import BaseCommand, CommandConnect, ServerError
from wire.tokens import mint

OWN_TOPIC = "persistent://public/default/guarded"
SCALABLE_TOPIC = "topic://public/scalable/t"


@pytest.fixture(scope="module")
def permissions() -> MemoryPermissions:
    return MemoryPermissions()


@pytest.fixture(scope="module")
def guarded_broker(secret_key_file: Path, permissions: MemoryPermissions
                   ) -> Iterator[MemoryBroker]:
    config = SecurityConfig(authentication_enabled=True, authorization_enabled=True,
                            token_secret_key=str(secret_key_file),
                            superuser_roles=frozenset({SUPERUSER}))
    with serving(guard=Guard(config, permissions)) as broker:
        yield broker


def client_as(broker: MemoryBroker, credentials: str) -> pulsar.Client:
    return pulsar.Client(
        broker.url, operation_timeout_seconds=5,
        authentication=pulsar.AuthenticationToken(credentials),
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))


def answers_to_connect(broker: MemoryBroker, credentials: str | None) -> list[BaseCommand]:
    """Everything the broker sends to a CONNECT with these credentials, up to its closing
    the connection (or two seconds)."""
    address = urlsplit(broker.url)
    connect = CommandConnect(client_version="starquake-test", protocol_version=19)
    if credentials is not None:
        connect.auth_method_name, connect.auth_data = "token", credentials.encode()
    answers: list[BaseCommand] = []
    decoder = FrameDecoder()
    with socket.create_connection((address.hostname, address.port), timeout=2) as sock:
        sock.sendall(encode_command(BaseCommand(type=BaseCommand.CONNECT, connect=connect)))
        try:
            while data := sock.recv(65536):
                answers += [frame.command for frame in decoder.feed(data)]
        except TimeoutError:
            pass
    return answers


def refusal(answers: list[BaseCommand]) -> ServerError.ValueType:
    assert [a.type for a in answers] == [BaseCommand.ERROR], answers
    return answers[0].error.error


def test_connect_without_a_token_is_answered_authentication_error_and_closed(
        guarded_broker: MemoryBroker) -> None:
    assert refusal(answers_to_connect(guarded_broker, None)) == ServerError.AuthenticationError


def test_a_token_signed_with_another_key_is_refused(guarded_broker: MemoryBroker) -> None:
    forged = mint(b"not the broker's key", SUPERUSER)
    assert refusal(answers_to_connect(guarded_broker, forged)) == (
        ServerError.AuthenticationError)


def test_an_expired_token_is_refused(guarded_broker: MemoryBroker) -> None:
    expired = token(SUPERUSER, expires_at=int(time.time()) - 1)
    assert refusal(answers_to_connect(guarded_broker, expired)) == (
        ServerError.AuthenticationError)


def test_a_valid_token_is_answered_connected(guarded_broker: MemoryBroker) -> None:
    answers = answers_to_connect(guarded_broker, token("anyone"))
    assert [a.type for a in answers] == [BaseCommand.CONNECTED]


def test_the_official_client_without_a_token_cannot_produce(
        guarded_broker: MemoryBroker) -> None:
    """The C++-based client takes the refusal for a dropped connection and retries until
    its operation timeout: it never gets a producer."""
    client = pulsar.Client(guarded_broker.url, operation_timeout_seconds=1,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        with pytest.raises(pulsar.PulsarException):
            client.create_producer(OWN_TOPIC)
    finally:
        client.close()


def test_a_superuser_produces_and_consumes(guarded_broker: MemoryBroker) -> None:
    client = client_as(guarded_broker, token(SUPERUSER))
    try:
        consumer = client.subscribe(OWN_TOPIC, "own")
        client.create_producer(OWN_TOPIC).send(b"mine")
        assert consumer.receive(5000).data() == b"mine"
    finally:
        client.close()


def test_a_role_without_produce_permission_cannot_produce(
        guarded_broker: MemoryBroker, permissions: MemoryPermissions) -> None:
    permissions.grant("public/reading", "reader", "consume")
    client = client_as(guarded_broker, token("reader"))
    try:
        client.subscribe("persistent://public/reading/t", "s").close()
        with pytest.raises(pulsar.AuthorizationError):
            client.create_producer("persistent://public/reading/t")
    finally:
        client.close()


def test_a_role_without_consume_permission_cannot_read_others_messages(
        guarded_broker: MemoryBroker, permissions: MemoryPermissions) -> None:
    permissions.grant("public/writing", "writer", "produce")
    client = client_as(guarded_broker, token("writer"))
    try:
        client.create_producer("persistent://public/writing/t").send(b"secret")
        with pytest.raises(pulsar.AuthorizationError):
            client.subscribe("persistent://public/writing/t", "spy")
    finally:
        client.close()


def test_a_role_with_no_permission_cannot_look_a_topic_up(
        guarded_broker: MemoryBroker) -> None:
    client = client_as(guarded_broker, token("stranger"))
    try:
        with pytest.raises(pulsar.AuthorizationError):
            client.get_topic_partitions(OWN_TOPIC)
    finally:
        client.close()


def test_a_tenant_admin_produces_in_its_tenant(
        guarded_broker: MemoryBroker, permissions: MemoryPermissions) -> None:
    permissions.tenants["acme"] = TenantInfo(admin_roles=("acme-admin",))
    client = client_as(guarded_broker, token("acme-admin"))
    try:
        client.create_producer("persistent://acme/ns/t").send(b"ours")
        with pytest.raises(pulsar.AuthorizationError):
            client.create_producer(OWN_TOPIC)
    finally:
        client.close()


@pytest.mark.parametrize(("role", "granted", "may_watch", "may_register"), [
    ("stranger", (), False, False),
    ("scalable-writer", ("produce",), True, False),
    ("scalable-reader", ("consume",), True, True),
    (SUPERUSER, (), True, True),
])
def test_scalable_commands_need_a_lookup_and_a_subscription_permission(
        guarded_broker: MemoryBroker, permissions: MemoryPermissions, role: str,
        granted: tuple[str, ...], may_watch: bool, may_register: bool) -> None:
    """A DAG watch (70) is a lookup: produce or consume; a registration (200) is a
    subscription: consume. Past the check this broker has no scalable topics, which it
    answers with another error than AuthorizationError."""
    if granted:
        permissions.grant("public/scalable", role, *granted)
    for command, permitted in ((scalable_lookup(SCALABLE_TOPIC), may_watch),
                               (scalable_registration(SCALABLE_TOPIC), may_register)):
        error = asyncio.run(scalable_error(guarded_broker.url, token(role), command))
        assert (error == ServerError.AuthorizationError) != permitted, (role, command.type)


def test_the_scalable_client_is_refused_at_once_without_a_token_or_permission(
        guarded_broker: MemoryBroker) -> None:
    """`NotPermitted` within seconds, not a retry until the 60 s timeout."""
    async def watch(credentials: str | None) -> int:
        watcher = DagWatcher(ConnectionPool([guarded_broker.url], token=credentials),
                             SCALABLE_TOPIC, timeout=60)
        with pytest.raises(NotPermitted) as refused:
            async with asyncio.timeout(5):
                await watcher.start()
        return refused.value.code
    assert asyncio.run(watch(None)) == ServerError.AuthenticationError
    assert asyncio.run(watch(token("stranger"))) == ServerError.AuthorizationError
