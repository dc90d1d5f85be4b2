"""Names of scalable topics (`topic://tenant/namespace/name`) and of the `segment://` topics
that back their segments.

A segment topic's last part is PIP-468's descriptor `{hexStart}-{hexEnd}-{segmentId}`
(`0000-7fff-1`), so the name alone tells an operator which hashes a segment held, and two
segments can never share a name: ids are never reused.
"""

from __future__ import annotations

from dataclasses import dataclass

from impl.ownership.topic_name import InvalidTopicName
from impl.scalable.layout import SegmentInfo

SCALABLE_DOMAIN = "topic"
SEGMENT_DOMAIN = "segment"


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
        return cls(*parts)

    def segment_topic(self, segment: SegmentInfo) -> str:
        """The `segment://` topic that stores `segment`'s messages."""
        return (f"{SEGMENT_DOMAIN}://{self.tenant}/{self.namespace}/{self.local_name}/"
                f"{segment_descriptor(segment)}")


def segment_descriptor(segment: SegmentInfo) -> str:
    """PIP-468's `{hexStart}-{hexEnd}-{segmentId}`, e.g. `0000-7fff-1`."""
    hash_range = segment.hash_range
    return f"{hash_range.start:04x}-{hash_range.end:04x}-{segment.segment_id}"
