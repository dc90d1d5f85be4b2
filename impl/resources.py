"""Clusters, tenants and namespaces as metadata: what the admin API writes and every broker
reads (Pulsar's `PulsarResources`).

The JSON shapes are Pulsar's (`ClusterData`, `TenantInfo`, namespace `Policies` with
`replication_clusters` and `bundles`), so a Pulsar admin client reads them unchanged. All
calls block on ZooKeeper; asyncio callers run them in a thread.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from impl.json_fields import INT32_MAX, boolean, text, url, whole
from impl.metadata import paths
from impl.metadata.errors import AlreadyExists, NotEmpty, NotFound
from impl.metadata.store import MetadataStore
from impl.naming.bundles import (
    DEFAULT_NUM_BUNDLES,
    FULL_UPPER_BOUND,
    MAX_NAMESPACE_BUNDLES,
    NamespaceBundles,
    even_boundaries,
)
from impl.naming.entity_names import check_name
from impl.naming.topic_name import NamespaceName, TopicName
from impl.retention import BacklogQuota, RetentionPolicies, exceeds_retention, quota_type


class ResourceError(Exception):
    """Base of the errors the admin API turns into HTTP statuses."""


class ResourceNotFound(ResourceError):
    def __init__(self, kind: str, name: str) -> None:
        super().__init__(f"{kind} {name} does not exist")
        self.kind, self.name = kind, name


class ResourceExists(ResourceError):
    def __init__(self, kind: str, name: str) -> None:
        super().__init__(f"{kind} {name} already exists")
        self.kind, self.name = kind, name


class ResourceInUse(ResourceError):
    """A delete of something that still holds things (a tenant with namespaces...)."""


class InvalidResource(ResourceError):
    """A request body or reference that cannot be accepted (unknown cluster, bad bundles)."""


def _dump(value: dict[str, Any]) -> bytes:
    return json.dumps(value, sort_keys=True).encode()


def _load(data: bytes) -> dict[str, Any]:
    loaded = json.loads(data or b"{}")
    return loaded if isinstance(loaded, dict) else {}


def names_in(value: dict[str, Any], key: str) -> tuple[str, ...]:
    """The list of names a request body holds under `key` (none when absent)."""
    names = value.get(key) or []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise InvalidResource(f"{key} must be a list of names, not {names!r:.80}")
    return tuple(names)


def cluster_names_in(value: dict[str, Any], key: str) -> tuple[str, ...]:
    return tuple(check_name("cluster", name) for name in names_in(value, key))


@dataclass(frozen=True)
class ClusterData:
    service_url: str = ""
    broker_service_url: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"serviceUrl": self.service_url, "brokerServiceUrl": self.broker_service_url}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> ClusterData:
        """Pulsar's `ClusterData`: its admin API's URL and its brokers' (TLS or not)."""
        return cls(url(value.get("serviceUrl", ""), "serviceUrl", ("http", "https")),
                   url(value.get("brokerServiceUrl", ""), "brokerServiceUrl",
                       ("pulsar", "pulsar+ssl")))


@dataclass(frozen=True)
class TenantInfo:
    admin_roles: tuple[str, ...] = ()
    allowed_clusters: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"adminRoles": list(self.admin_roles),
                "allowedClusters": list(self.allowed_clusters)}

    @classmethod
    def from_json(cls, value: dict[str, Any]) -> TenantInfo:
        return cls(names_in(value, "adminRoles"), cluster_names_in(value, "allowedClusters"))


@dataclass(frozen=True)
class NamespacePolicies:
    replication_clusters: tuple[str, ...] = ()
    bundle_boundaries: tuple[int, ...] = field(
        default_factory=lambda: tuple(even_boundaries(DEFAULT_NUM_BUNDLES))
    )
    message_ttl_in_seconds: int | None = None
    """Pulsar's namespace message TTL: older messages expire (replicators skip them)."""
    retention_policies: RetentionPolicies | None = None
    backlog_quota_map: tuple[tuple[str, BacklogQuota], ...] = ()
    """(`BacklogQuotaType` name, quota) pairs; stored, not enforced (impl/retention.py)."""
    schema_compatibility_strategy: str = "UNDEFINED"
    """Pulsar's `SchemaCompatibilityStrategy` name; UNDEFINED: the broker's default
    (impl/broker/schemas/compatibility.py)."""
    deduplication_enabled: bool | None = None
    """Pulsar's `deduplicationEnabled`: None leaves it to the broker's default; a topic's
    own policy overrides it (impl/broker/dedup_policy.py)."""
    permissions: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """(role, actions) pairs, sorted: Pulsar's `auth_policies.namespace_auth`, what
    impl/security/authorization.py grants a role on the namespace's topics."""

    def to_json(self) -> dict[str, Any]:
        return {
            "replication_clusters": list(self.replication_clusters),
            "bundles": {
                "boundaries": [f"0x{b:08x}" for b in self.bundle_boundaries],
                "numBundles": len(self.bundle_boundaries) - 1,
            },
            "message_ttl_in_seconds": self.message_ttl_in_seconds,
            "retention_policies": (None if self.retention_policies is None
                                   else self.retention_policies.to_json()),
            "backlog_quota_map": {kind: quota.to_json() for kind, quota in self.backlog_quota_map},
            "schema_compatibility_strategy": self.schema_compatibility_strategy,
            "deduplicationEnabled": self.deduplication_enabled,
            "auth_policies": {"namespace_auth": {role: list(actions)
                                                 for role, actions in self.permissions}},
        }

    @classmethod
    def from_json(cls, value: dict[str, Any],
                  max_bundles: int = MAX_NAMESPACE_BUNDLES) -> NamespacePolicies:
        """Pulsar's `Policies` body; `bundles` may give `boundaries` or only `numBundles`,
        at most `max_bundles` of them (checked before any boundary is computed)."""
        bundles = value.get("bundles") or {}
        try:
            if not isinstance(bundles, dict):
                raise TypeError(f"bundles must be an object, not {bundles!r}")
            if bundles.get("boundaries"):
                count = len(bundles["boundaries"]) - 1
            else:
                count = int(bundles.get("numBundles", DEFAULT_NUM_BUNDLES))
            if not 1 <= count <= max_bundles:
                raise ValueError(f"{count} bundles; a namespace has 1 to {max_bundles} "
                                 f"(loadBalancerNamespaceMaximumBundles)")
            if bundles.get("boundaries"):
                boundaries = tuple(int(text(b, "a bundle boundary"), 16)
                                   for b in bundles["boundaries"])
                _check_boundaries(boundaries)
            else:
                boundaries = tuple(even_boundaries(count))
        except (TypeError, ValueError, OverflowError) as exc:
            raise InvalidResource(f"invalid bundles in namespace policies: {exc}") from None
        ttl = value.get("message_ttl_in_seconds")
        retention = value.get("retention_policies")
        quotas = value.get("backlog_quota_map") or {}
        deduplication = value.get("deduplicationEnabled")
        granted = (value.get("auth_policies") or {}).get("namespace_auth") or {}
        return cls(cluster_names_in(value, "replication_clusters"), boundaries,
                   None if ttl is None else whole(ttl, "message_ttl_in_seconds", 0, INT32_MAX),
                   None if retention is None else RetentionPolicies.from_json(retention),
                   tuple(sorted((quota_type(kind), BacklogQuota.from_json(quota))
                                for kind, quota in quotas.items())),
                   text(value.get("schema_compatibility_strategy") or "UNDEFINED",
                        "schema_compatibility_strategy"),
                   None if deduplication is None else boolean(deduplication,
                                                              "deduplicationEnabled"),
                   tuple(sorted((str(role), tuple(sorted(map(str, actions))))
                                for role, actions in granted.items())))


def _check_boundaries(boundaries: tuple[int, ...]) -> None:
    """Pulsar's rule: from 0x00000000 to 0xffffffff, rising, so every hash has a bundle."""
    if boundaries[0] != 0 or boundaries[-1] != FULL_UPPER_BOUND:
        raise ValueError("the first boundary must be 0x00000000 and the last 0xffffffff")
    if any(low >= high for low, high in itertools.pairwise(boundaries)):
        raise ValueError("boundaries must rise")


def _namespace_auth(policies: dict[str, Any]) -> dict[str, Any]:
    """The role -> actions map inside stored policies, made if missing (Pulsar's shape)."""
    auth = policies.setdefault("auth_policies", {})
    namespace_auth: dict[str, Any] = auth.setdefault("namespace_auth", {})
    return namespace_auth


class PulsarResources:
    """Reads and writes of cluster, tenant and namespace metadata, with Pulsar's rules
    (a namespace needs its tenant, a tenant with namespaces cannot be deleted)."""

    def __init__(self, store: MetadataStore) -> None:
        self.store = store

    # --- clusters ---------------------------------------------------------------------

    def clusters(self) -> list[str]:
        return self._children(paths.CLUSTERS)

    def cluster(self, name: str) -> ClusterData:
        return ClusterData.from_json(self._read("cluster", name, paths.cluster(name)))

    def create_cluster(self, name: str, data: ClusterData) -> None:
        check_name("cluster", name)
        self._create("cluster", name, paths.cluster(name), data.to_json())

    def update_cluster(self, name: str, data: ClusterData) -> None:
        self._write("cluster", name, paths.cluster(name), data.to_json())

    def delete_cluster(self, name: str) -> None:
        self._delete("cluster", name, paths.cluster(name))

    # --- tenants ----------------------------------------------------------------------

    def tenants(self) -> list[str]:
        return self._children(paths.POLICIES)

    def tenant(self, name: str) -> TenantInfo:
        return TenantInfo.from_json(self._read("tenant", name, paths.tenant_policies(name)))

    def create_tenant(self, name: str, info: TenantInfo) -> None:
        check_name("tenant", name)
        self._check_clusters(info.allowed_clusters)
        self._create("tenant", name, paths.tenant_policies(name), info.to_json())

    def update_tenant(self, name: str, info: TenantInfo) -> None:
        self._check_clusters(info.allowed_clusters)
        self._write("tenant", name, paths.tenant_policies(name), info.to_json())

    def delete_tenant(self, name: str) -> None:
        self._delete("tenant", name, paths.tenant_policies(name))

    # --- namespaces -------------------------------------------------------------------

    def namespaces(self, tenant: str) -> list[str]:
        self.tenant(tenant)
        return [f"{tenant}/{ns}" for ns in self._children(paths.tenant_policies(tenant))]

    def policies(self, namespace: NamespaceName) -> NamespacePolicies:
        path = paths.namespace_policies(namespace.tenant, namespace.namespace)
        return NamespacePolicies.from_json(self._read("namespace", str(namespace), path))

    def bundles(self, namespace: NamespaceName) -> NamespaceBundles:
        """The namespace's bundles; `ResourceNotFound` when the namespace does not exist."""
        boundaries = self.policies(namespace).bundle_boundaries
        try:
            return NamespaceBundles.from_boundaries(namespace, boundaries)
        except ValueError as exc:
            raise InvalidResource(str(exc)) from None

    def create_namespace(self, namespace: NamespaceName, policies: NamespacePolicies) -> None:
        self.tenant(namespace.tenant)
        self._check_clusters(policies.replication_clusters)
        NamespaceBundles.from_boundaries(namespace, policies.bundle_boundaries)
        path = paths.namespace_policies(namespace.tenant, namespace.namespace)
        self._create("namespace", str(namespace), path, policies.to_json())

    def set_replication_clusters(self, namespace: NamespaceName, clusters: list[str]) -> None:
        self._check_clusters(clusters)
        self._set_policy(namespace, "replication_clusters", list(clusters))

    def set_message_ttl(self, namespace: NamespaceName, seconds: int | None) -> None:
        """None removes the TTL."""
        if seconds is not None and seconds < 0:
            raise InvalidResource(f"a message TTL cannot be negative: {seconds}")
        self._set_policy(namespace, "message_ttl_in_seconds", seconds)

    def set_schema_compatibility_strategy(self, namespace: NamespaceName, name: str) -> None:
        """`name` is a `SchemaCompatibilityStrategy` the caller has checked."""
        self._set_policy(namespace, "schema_compatibility_strategy", name)

    def set_deduplication(self, namespace: NamespaceName, enabled: bool | None) -> None:
        """None removes the namespace's choice (the broker's default applies)."""
        self._set_policy(namespace, "deduplicationEnabled", enabled)

    def set_retention(self, namespace: NamespaceName,
                      retention: RetentionPolicies | None) -> None:
        """None removes it; refused below a backlog quota already set (as Pulsar does)."""
        def change(policies: dict[str, Any]) -> None:
            current = NamespacePolicies.from_json(policies)
            if retention is not None and any(exceeds_retention(quota, retention)
                                             for _, quota in current.backlog_quota_map):
                raise InvalidResource("retention must exceed the namespace's backlog quota")
            policies["retention_policies"] = None if retention is None else retention.to_json()
        self._update_policies(namespace, change)

    def set_backlog_quota(self, namespace: NamespaceName, kind: str,
                          quota: BacklogQuota | None) -> None:
        """The quota of one `BacklogQuotaType`; None removes it. Refused at or above the
        namespace's retention (as Pulsar does)."""
        def change(policies: dict[str, Any]) -> None:
            current = NamespacePolicies.from_json(policies)
            quotas = dict(current.backlog_quota_map)
            if quota is None:
                quotas.pop(kind, None)
            elif exceeds_retention(quota, current.retention_policies):
                raise InvalidResource("the backlog quota exceeds the namespace's retention; "
                                      "increase the retention first")
            else:
                quotas[kind] = quota
            policies["backlog_quota_map"] = {k: q.to_json() for k, q in sorted(quotas.items())}
        self._update_policies(namespace, change)

    def grant_permission(self, namespace: NamespaceName, role: str,
                         actions: tuple[str, ...]) -> None:
        """Give `role` exactly `actions` on the namespace (replacing what it had)."""
        self._update_policies(namespace, lambda policies: _namespace_auth(policies).update(
            {role: sorted(actions)}))

    def revoke_permission(self, namespace: NamespaceName, role: str) -> None:
        self._update_policies(namespace,
                              lambda policies: _namespace_auth(policies).pop(role, None))

    def _set_policy(self, namespace: NamespaceName, key: str, value: Any) -> None:
        """Change one field of the namespace's policies, leaving the others as they are."""
        self._update_policies(namespace, lambda policies: policies.update({key: value}))

    def _update_policies(self, namespace: NamespaceName,
                         change: Callable[[dict[str, Any]], None]) -> None:
        """Apply `change` to the stored policies as one compare-and-set (it may refuse by
        raising)."""
        path = paths.namespace_policies(namespace.tenant, namespace.namespace)

        def replace(data: bytes) -> bytes:
            policies = _load(data)
            change(policies)
            return _dump(policies)

        try:
            self.store.update(path, replace)
        except NotFound:
            raise ResourceNotFound("namespace", str(namespace)) from None

    def delete_namespace(self, namespace: NamespaceName) -> None:
        if self.topics(namespace):
            raise ResourceInUse(f"namespace {namespace} still has topics")
        path = paths.namespace_policies(namespace.tenant, namespace.namespace)
        self._delete("namespace", str(namespace), path)

    def topics(self, namespace: NamespaceName) -> list[str]:
        """Full names of the namespace's persistent topics (those with a managed ledger)."""
        parent = paths.namespace_managed_ledgers(namespace.tenant, namespace.namespace)
        return [f"persistent://{namespace}/{name}" for name in self._children(parent)]

    def topic_exists(self, topic: TopicName) -> bool:
        """A persistent topic exists while its managed ledger's metadata does."""
        return self.store.exists(paths.managed_ledger(topic.tenant, topic.namespace,
                                                      topic.local_name))

    # --- helpers ----------------------------------------------------------------------

    def _check_clusters(self, clusters: tuple[str, ...] | list[str]) -> None:
        known = set(self.clusters())
        unknown = [c for c in clusters if c not in known]
        if unknown:
            raise InvalidResource(f"unknown cluster(s): {', '.join(unknown)}")

    def _children(self, path: str) -> list[str]:
        try:
            return [paths.decode(c) for c in self.store.children(path)]
        except NotFound:
            return []

    def _read(self, kind: str, name: str, path: str) -> dict[str, Any]:
        try:
            return _load(self.store.get(path).data)
        except NotFound:
            raise ResourceNotFound(kind, name) from None

    def _create(self, kind: str, name: str, path: str, value: dict[str, Any]) -> None:
        try:
            self.store.create(path, _dump(value))
        except AlreadyExists:
            raise ResourceExists(kind, name) from None

    def _write(self, kind: str, name: str, path: str, value: dict[str, Any]) -> None:
        try:
            self.store.set(path, _dump(value), -1)
        except NotFound:
            raise ResourceNotFound(kind, name) from None

    def _delete(self, kind: str, name: str, path: str) -> None:
        try:
            self.store.delete(path)
        except NotFound:
            raise ResourceNotFound(kind, name) from None
        except NotEmpty:
            raise ResourceInUse(f"{kind} {name} is not empty") from None

    def ensure_namespace(self, namespace: NamespaceName, cluster: str) -> None:
        """Create the tenant and namespace if missing, allowed in and replicated to
        `cluster` (how a cluster gets its `public/default`, as Pulsar's cluster
        initialisation does). Safe to run from every broker at once."""
        try:
            self.create_tenant(namespace.tenant, TenantInfo(allowed_clusters=(cluster,)))
        except ResourceExists:
            pass
        try:
            self.create_namespace(namespace, NamespacePolicies(replication_clusters=(cluster,)))
        except ResourceExists:
            pass

    def ensure_cluster(self, name: str, data: ClusterData) -> None:
        try:
            self.create_cluster(name, data)
        except ResourceExists:
            pass
