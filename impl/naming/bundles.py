"""Namespace bundles: the unit of topic ownership.

As in Pulsar, a namespace's 32-bit hash space is cut into contiguous ranges ("bundles"), a
topic belongs to the bundle whose range holds the hash of its full name, and brokers own
whole bundles, never single topics. The hash is CRC-32 (zlib's, the same function as the
Guava `Hashing.crc32()` Pulsar's namespace service hands its bundle factory) of the UTF-8
full name (`persistent://tenant/ns/topic`). Ranges are half-open `[lower, upper)` except
the last, which also holds 0xffffffff; they print as Pulsar prints them,
`0x00000000_0x40000000`.
"""

from __future__ import annotations

import bisect
import itertools
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from impl.naming.topic_name import NamespaceName, TopicName

FULL_LOWER_BOUND = 0x00000000
FULL_UPPER_BOUND = 0xFFFFFFFF
DEFAULT_NUM_BUNDLES = 4
"""Pulsar's `defaultNumberOfNamespaceBundles`."""
MAX_NAMESPACE_BUNDLES = 128
"""Pulsar's default `loadBalancerNamespaceMaximumBundles`: the most bundles a namespace
may be created with (a count from a request is checked against it before anything is
computed from it)."""


def topic_hash(topic: TopicName) -> int:
    """The 32-bit position of a topic in its namespace's hash space."""
    return zlib.crc32(str(topic).encode()) & 0xFFFFFFFF


@dataclass(frozen=True, order=True)
class BundleRange:
    lower: int
    upper: int
    last: bool = False
    """The last range of a namespace includes its upper bound (0xffffffff)."""

    def __str__(self) -> str:
        return f"0x{self.lower:08x}_0x{self.upper:08x}"

    def contains(self, position: int) -> bool:
        return self.lower <= position < self.upper or (self.last and position == self.upper)

    @classmethod
    def parse(cls, text: str) -> BundleRange:
        """Pulsar's `0xLOWER_0xUPPER` spelling; raises ValueError otherwise."""
        lower_text, sep, upper_text = text.partition("_")
        try:
            if not sep or not (lower_text.startswith("0x") and upper_text.startswith("0x")):
                raise ValueError
            lower, upper = int(lower_text, 16), int(upper_text, 16)
        except ValueError:
            raise ValueError(f"invalid bundle range {text!r}: expected 0xLOWER_0xUPPER") from None
        if not FULL_LOWER_BOUND <= lower < upper <= FULL_UPPER_BOUND:
            raise ValueError(f"invalid bundle range {text!r}: bounds out of order or range")
        return cls(lower, upper, upper == FULL_UPPER_BOUND)


@dataclass(frozen=True, order=True)
class NamespaceBundle:
    """One bundle of one namespace: what an ownership node stands for."""

    namespace: NamespaceName
    range: BundleRange

    def __str__(self) -> str:
        return f"{self.namespace}/{self.range}"

    @classmethod
    def parse(cls, text: str) -> NamespaceBundle:
        """`tenant/namespace/0xLOWER_0xUPPER`, as the admin API and logs spell a bundle."""
        namespace_text, _, range_text = text.rpartition("/")
        return cls(NamespaceName.parse(namespace_text), BundleRange.parse(range_text))


def in_bundle(topic: TopicName, bundle: NamespaceBundle) -> bool:
    return topic.namespace_name == bundle.namespace and bundle.range.contains(topic_hash(topic))


def even_boundaries(count: int) -> list[int]:
    """`count` equal ranges over the full space, as Pulsar cuts a new namespace."""
    if count < 1:
        raise ValueError(f"a namespace needs at least one bundle, not {count}")
    size = (FULL_UPPER_BOUND + 1) // count
    return [i * size for i in range(count)] + [FULL_UPPER_BOUND]


@dataclass(frozen=True)
class NamespaceBundles:
    """A namespace's bundles, from its policies' boundaries (Pulsar's `BundlesData`)."""

    namespace: NamespaceName
    boundaries: tuple[int, ...]

    def __post_init__(self) -> None:
        b = self.boundaries
        if (len(b) < 2 or b[0] != FULL_LOWER_BOUND or b[-1] != FULL_UPPER_BOUND
                or any(x >= y for x, y in itertools.pairwise(b))):
            raise ValueError(f"bundle boundaries of {self.namespace} do not cover the hash "
                             f"space in increasing order: {[hex(x) for x in b]}")

    @classmethod
    def even(cls, namespace: NamespaceName, count: int = DEFAULT_NUM_BUNDLES) -> NamespaceBundles:
        return cls(namespace, tuple(even_boundaries(count)))

    @classmethod
    def from_boundaries(cls, namespace: NamespaceName,
                        boundaries: Sequence[int]) -> NamespaceBundles:
        return cls(namespace, tuple(boundaries))

    @property
    def bundles(self) -> list[NamespaceBundle]:
        b = self.boundaries
        return [
            NamespaceBundle(self.namespace, BundleRange(lo, hi, hi == FULL_UPPER_BOUND))
            for lo, hi in itertools.pairwise(b)
        ]

    def find(self, topic: TopicName) -> NamespaceBundle:
        """The bundle that holds `topic` (which must be in this namespace)."""
        if topic.namespace_name != self.namespace:
            raise ValueError(f"{topic} is not in namespace {self.namespace}")
        position = topic_hash(topic)
        # The last boundary is inclusive: clamp so 0xffffffff lands in the last range.
        index = min(bisect.bisect_right(self.boundaries, position) - 1, len(self.boundaries) - 2)
        lo, hi = self.boundaries[index], self.boundaries[index + 1]
        return NamespaceBundle(self.namespace, BundleRange(lo, hi, hi == FULL_UPPER_BOUND))
