"""Who may do what, as Pulsar's default authorization provider decides it: superusers
everything; a tenant's admin roles everything in that tenant; any other role only the
actions granted to it on a namespace (its `permissions` policy), with a lookup allowed to
a role that may produce or consume.

The answers read the metadata on every request (blocking: asyncio callers use a thread),
so a grant or a revocation counts from the next request on, on every broker.
"""

from __future__ import annotations

from typing import Protocol

from impl.naming.topic_name import NamespaceName
from impl.resources import NamespacePolicies, ResourceNotFound, TenantInfo

PRODUCE = "produce"
CONSUME = "consume"
ACTIONS = frozenset({PRODUCE, CONSUME, "functions", "sources", "sinks", "packages"})
"""Pulsar's `AuthAction`s: what a namespace permission may grant."""
LOOKUP = frozenset({PRODUCE, CONSUME})
"""What a role needs to look a topic up: leave to produce or to consume (Pulsar's
`canLookup`)."""


class PermissionSource(Protocol):
    """Where tenants' admin roles and namespaces' permissions are stored
    (impl.resources.PulsarResources)."""

    def tenant(self, name: str) -> TenantInfo: ...

    def policies(self, namespace: NamespaceName) -> NamespacePolicies: ...


class Authorizer:
    def __init__(self, source: PermissionSource, superusers: frozenset[str]) -> None:
        self._source = source
        self.superusers = superusers

    def is_superuser(self, role: str) -> bool:
        return role in self.superusers

    def is_tenant_admin(self, role: str, tenant: str) -> bool:
        """A superuser, or one of the tenant's admin roles (none of a tenant that is
        not there)."""
        if self.is_superuser(role):
            return True
        try:
            return role in self._source.tenant(tenant).admin_roles
        except ResourceNotFound:
            return False

    def granted(self, role: str, namespace: NamespaceName) -> frozenset[str]:
        """The actions the namespace's permissions give `role` (none of a namespace that is
        not there)."""
        try:
            permissions = dict(self._source.policies(namespace).permissions)
        except ResourceNotFound:
            return frozenset()
        return frozenset(permissions.get(role, ()))

    def may(self, role: str, namespace: NamespaceName, actions: frozenset[str]) -> bool:
        """May `role` do any of `actions` on the namespace's topics?"""
        return (self.is_tenant_admin(role, namespace.tenant)
                or bool(self.granted(role, namespace) & actions))


class NoPermissions:
    """A permission source that holds no tenant and no namespace, for a service that keeps
    none (the lookup service): only superusers pass its checks."""

    def tenant(self, name: str) -> TenantInfo:
        raise ResourceNotFound("tenant", name)

    def policies(self, namespace: NamespaceName) -> NamespacePolicies:
        raise ResourceNotFound("namespace", str(namespace))
