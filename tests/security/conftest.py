"""A secret key, tokens for a few roles, and an in-memory permission store for brokers
with security switched on."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from impl.ownership.topic_name import NamespaceName
from impl.resources import NamespacePolicies, ResourceNotFound, TenantInfo
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
