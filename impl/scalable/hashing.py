"""The key hash that routes a message to a segment, in one place for the whole implementation.

history.md fixes it (the `misrouted` checker recomputes it): murmur3 x86 32-bit with seed 0
over the key's UTF-8 bytes, made non-negative, modulo the 16-bit hash space that segment
ranges divide.
"""

from __future__ import annotations

import mmh3

HASH_SPACE = 0x10000
"""Number of hash values; segment ranges partition [0, HASH_SPACE - 1]."""
HASH_MAX = HASH_SPACE - 1


def key_hash(key: str) -> int:
    """The hash in [0x0000, 0xFFFF] whose active segment receives messages with `key`."""
    return (mmh3.hash(key.encode(), 0) & 0x7FFFFFFF) % HASH_SPACE
