"""A secret key, tokens for a few roles, an in-memory permission store for brokers with
security switched on, and the scalable-topic commands a guarded broker is asked."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from impl.naming.topic_name import NamespaceName
from impl.resources import NamespacePolicies, ResourceNotFound, TenantInfo
from wire.connection import ClientConnection
from wire.pulsar_api_pb2 import (
    BaseCommand,
    CommandScalableConsumerRegister,
    CommandScalableTopicLookup,
)
from wire.tokens import mint

SECRET = b"0123456789abcdef0123456789abcdef"
SUPERUSER = "admin"


@dataclass
class MemoryPermissions:
    """Tenants' admin roles and namespaces' permissions, as PulsarResources keeps them."""

    tenants: dict[str, TenantInfo] = field(default_factory=dict)
    namespaces: dict[NamespaceName, NamespacePolicies] = field(default_factory=dict)

    def tenant(self, name: str) -> TenantInfo:
        if name not in self.tenants:
            raise ResourceNotFound("tenant", name)
        return self.tenants[name]

    def policies(self, namespace: NamespaceName) -> NamespacePolicies:
        if namespace not in self.namespaces:
            raise ResourceNotFound("namespace", str(namespace))
        return self.namespaces[namespace]

    def grant(self, namespace: str, role: str, *actions: str) -> None:
        name = NamespaceName.parse(namespace)
        self.namespaces[name] = NamespacePolicies(permissions=((role, actions),))


@pytest.fixture(scope="session")
def secret_key_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("security") / "secret.key"
    path.write_bytes(SECRET)
    return path


def token(role: str, expires_at: int | None = None) -> str:
    return mint(SECRET, role, expires_at)


SCALABLE_REQUEST_ID = 1


def scalable_lookup(topic: str) -> BaseCommand:
    """Command 70: open a DAG watch session (answered with a 71)."""
    return BaseCommand(type=BaseCommand.SCALABLE_TOPIC_LOOKUP,
                       scalableTopicLookup=CommandScalableTopicLookup(
                           request_id=SCALABLE_REQUEST_ID, session_id=1, topic=topic))


def scalable_registration(topic: str) -> BaseCommand:
    """Command 200: register a stream consumer (answered with a 201)."""
    return BaseCommand(type=BaseCommand.SCALABLE_CONSUMER_REGISTER,
                       scalableConsumerRegister=CommandScalableConsumerRegister(
                           request_id=SCALABLE_REQUEST_ID, consumer_id=1, topic=topic,
                           subscription="stream", consumer_name="asker"))


async def scalable_error(url: str, credentials: str, command: BaseCommand) -> int:
    """The error of the broker's answer to `command` (70 or 200) on a fresh connection
    presenting `credentials`; 0 for none."""
    connection = await ClientConnection.open(url, token=credentials)
    try:
        answer = (await connection.request(command, SCALABLE_REQUEST_ID, timeout=10)).command
    finally:
        connection.close()
    if answer.type == BaseCommand.SCALABLE_TOPIC_UPDATE:
        return answer.scalableTopicUpdate.error
    return answer.scalableConsumerAssignment.error
