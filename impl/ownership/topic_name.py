"""Topic names as Pulsar spells them: `persistent://tenant/namespace/local-name`.

Clients may send the short forms (`my-topic`, `tenant/namespace/my-topic`); the broker
always hashes, stores and reports the full form, so that every broker puts a topic in the
same bundle whatever spelling its client used.
"""

from __future__ import annotations

from dataclasses import dataclass

from wire.topic_names import InvalidTopicName

DOMAINS = ("persistent", "non-persistent", "segment")
"""`segment` holds the segments of PIP-468 scalable topics (docs/scalable-topics.md)."""
DEFAULT_TENANT = "public"
DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True)
class NamespaceName:
    tenant: str
    namespace: str

    def __str__(self) -> str:
        return f"{self.tenant}/{self.namespace}"

    @classmethod
    def parse(cls, text: str) -> NamespaceName:
        tenant, slash, namespace = text.partition("/")
        if not (tenant and slash and namespace) or "/" in namespace:
            raise ValueError(f"invalid namespace name {text!r}: expected tenant/namespace")
        return cls(tenant, namespace)


@dataclass(frozen=True)
class TopicName:
    domain: str
    tenant: str
    namespace: str
    local_name: str

    @property
    def namespace_name(self) -> NamespaceName:
        return NamespaceName(self.tenant, self.namespace)

    @property
    def persistent(self) -> bool:
        return self.domain == "persistent"

    def __str__(self) -> str:
        return f"{self.domain}://{self.tenant}/{self.namespace}/{self.local_name}"

    @classmethod
    def parse(cls, name: str) -> TopicName:
        """The full name of any spelling Pulsar's clients accept (the v2 forms; the old
        `tenant/cluster/namespace` form is not supported)."""
        domain, sep, rest = name.partition("://")
        if not sep:
            domain, rest = "persistent", name
            if "/" not in name:
                return cls(domain, DEFAULT_TENANT, DEFAULT_NAMESPACE, name)
        if domain not in DOMAINS:
            raise InvalidTopicName(name, f"domain must be one of {', '.join(DOMAINS)}")
        parts = rest.split("/", 2)
        if len(parts) != 3 or not all(parts):
            raise InvalidTopicName(name, "expected domain://tenant/namespace/topic")
        return cls(domain, *parts)
