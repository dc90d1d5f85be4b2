"""Names of PIP-468 scalable topics (`topic://tenant/namespace/name`) and of the `segment://`
topics that back their segments: part of the public interface, so both the brokers and
the harness's client spell them from here.

A segment topic's last part is PIP-468's descriptor `{hexStart}-{hexEnd}-{segmentId}`
(`0000-7fff-1`), so the name alone tells an operator which hashes a segment held, and two
segments can never share a name: ids are never reused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

SCALABLE_DOMAIN = "topic"
SEGMENT_DOMAIN = "segment"
SEGMENTS_ADMIN_API = "/admin/v2/segments"
"""PIP-468's Segments admin API: what a segment topic's owner does to it (create with
subscriptions, terminate, delete), for the controller and for any client of the API."""


class InvalidTopicName(ValueError):
    """A topic name that cannot be placed in a namespace."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"invalid topic name {name!r}: {reason}")
        self.name = name


class SegmentRange(Protocol):
    """What names a segment: its id and the key hashes it holds (both ends inclusive)."""

    @property
    def segment_id(self) -> int: ...

    @property
    def hash_start(self) -> int: ...

    @property
    def hash_end(self) -> int: ...


@dataclass(frozen=True)
class ScalableTopicName:
    tenant: str
    namespace: str
    local_name: str

    def __str__(self) -> str:
        return f"{SCALABLE_DOMAIN}://{self.tenant}/{self.namespace}/{self.local_name}"

    @classmethod
    def parse(cls, name: str) -> ScalableTopicName:
        """From `topic://tenant/namespace/name` (the domain may be left out)."""
        domain, sep, rest = name.partition("://")
        if not sep:
            domain, rest = SCALABLE_DOMAIN, name
        if domain != SCALABLE_DOMAIN:
            raise InvalidTopicName(name, f"the domain must be {SCALABLE_DOMAIN}://")
        parts = rest.split("/", 2)
        if len(parts) != 3 or not all(parts):
            raise InvalidTopicName(name, "expected topic://tenant/namespace/name")
        tenant, namespace, local_name = parts
        return cls(tenant, namespace, local_name)

    def segment_topic(self, segment: SegmentRange) -> str:
        """The `segment://` topic that stores `segment`'s messages."""
        return (f"{SEGMENT_DOMAIN}://{self.tenant}/{self.namespace}/{self.local_name}/"
                f"{segment_descriptor(segment)}")


def segment_descriptor(segment: SegmentRange) -> str:
    """PIP-468's `{hexStart}-{hexEnd}-{segmentId}`, e.g. `0000-7fff-1`."""
    return f"{segment.hash_start:04x}-{segment.hash_end:04x}-{segment.segment_id}"


def segment_admin_path(segment_topic: str) -> str:
    """`segment://t/ns/name/0000-7fff-1` -> `/admin/v2/segments/t/ns/name/0000-7fff-1`."""
    domain, _, rest = segment_topic.partition("://")
    if domain != SEGMENT_DOMAIN or len(rest.split("/")) != 4 or not all(rest.split("/")):
        raise InvalidTopicName(segment_topic, "expected segment://tenant/namespace/name/"
                                              "descriptor")
    return f"{SEGMENTS_ADMIN_API}/{rest}"
