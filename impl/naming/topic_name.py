"""Topic names as Pulsar spells them: `persistent://tenant/namespace/local-name`.

Clients may send the short forms (`my-topic`, `tenant/namespace/my-topic`); the broker
always hashes, stores and reports the full form, so that every broker puts a topic in the
same bundle whatever spelling its client used.
"""

from __future__ import annotations

from dataclasses import dataclass

from impl.naming.entity_names import InvalidName, check_name
from wire.topic_names import InvalidTopicName

NON_PERSISTENT = "non-persistent"
DOMAINS = ("persistent", NON_PERSISTENT, "segment")
"""`segment` holds the segments of PIP-468 scalable topics (docs/scalable-topics.md)."""
DEFAULT_TENANT = "public"
DEFAULT_NAMESPACE = "default"
PARTITION_SUFFIX = "-partition-"
"""A partition of partitioned topic `t` is the ordinary topic `t-partition-<index>`."""


@dataclass(frozen=True)
class NamespaceName:
    tenant: str
    namespace: str

    def __post_init__(self) -> None:
        check_name("tenant", self.tenant)
        check_name("namespace", self.namespace)

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

    def __post_init__(self) -> None:
        """A known domain, and its namespace's names as Pulsar checks them; a local name
        may hold anything but nothing, or a character no ZooKeeper path or log line can
        carry."""
        if self.domain not in DOMAINS:
            raise InvalidTopicName(str(self), f"domain must be one of {', '.join(DOMAINS)}")
        try:
            NamespaceName(self.tenant, self.namespace)
        except InvalidName as exc:
            raise InvalidTopicName(str(self), str(exc)) from None
        if not self.local_name or not self.local_name.isprintable():
            raise InvalidTopicName(str(self), "the topic's own name is empty or unprintable")

    @property
    def namespace_name(self) -> NamespaceName:
        return NamespaceName(self.tenant, self.namespace)

    @property
    def persistent(self) -> bool:
        return self.domain == "persistent"

    @property
    def partition_index(self) -> int | None:
        """The index when this names a partition (`t-partition-2`: 2), else None."""
        base, suffix, index = self.local_name.rpartition(PARTITION_SUFFIX)
        return int(index) if base and suffix and index.isdigit() else None

    @property
    def partitioned_topic(self) -> TopicName:
        """The partitioned topic a partition belongs to; any other topic is its own."""
        if self.partition_index is None:
            return self
        return self.with_local_name(self.local_name.rpartition(PARTITION_SUFFIX)[0])

    def partition(self, index: int) -> TopicName:
        return self.with_local_name(f"{self.local_name}{PARTITION_SUFFIX}{index}")

    def with_local_name(self, local_name: str) -> TopicName:
        return TopicName(self.domain, self.tenant, self.namespace, local_name)

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
        parts = rest.split("/", 2)
        if len(parts) != 3 or not all(parts):
            raise InvalidTopicName(name, "expected domain://tenant/namespace/topic")
        return cls(domain, *parts)
