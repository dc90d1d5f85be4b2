"""Names the client uses: a scalable topic's `topic://tenant/namespace/name`, and the
`segment://` topic behind each of its segments, whose last part is PIP-468's descriptor
`{hexStart}-{hexEnd}-{segmentId}` (`0000-7fff-1`)."""

from __future__ import annotations

from dataclasses import dataclass

from harness.scalable_client.layout import Segment

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
        """From `topic://tenant/namespace/name` (or without the domain); `ValueError` for
        anything else."""
        domain, sep, rest = name.partition("://")
        if not sep:
            domain, rest = SCALABLE_DOMAIN, name
        parts = rest.split("/", 2)
        if domain != SCALABLE_DOMAIN or len(parts) != 3 or not all(parts):
            raise ValueError(f"not a scalable topic name ({SCALABLE_DOMAIN}://tenant/"
                             f"namespace/name): {name!r}")
        tenant, namespace, local_name = parts
        return cls(tenant, namespace, local_name)

    def segment_topic(self, segment: Segment) -> str:
        """The `segment://` topic that stores `segment`'s messages."""
        return (f"{SEGMENT_DOMAIN}://{self.tenant}/{self.namespace}/{self.local_name}/"
                f"{segment.hash_start:04x}-{segment.hash_end:04x}-{segment.segment_id}")
