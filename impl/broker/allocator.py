"""How the broker process asks the C allocator to hand large buffers back.

A client that stops mid-frame leaves its connection's buffer holding up to 5 MiB until the
connection closes. glibc serves such a buffer from `mmap` at first, but raises its mmap
threshold each time one is freed, after which the next ones come from the heap and stay
in the process once freed: 40 half-sent frames kept about 130 MiB resident after their
connections closed. With the threshold fixed, every large buffer is mapped on its own and
returned to the system when freed. Elsewhere than glibc this does nothing."""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger(__name__)

M_MMAP_THRESHOLD = -3
"""glibc's `mallopt` parameter; setting it switches the dynamic threshold off."""
LARGE_BUFFER_BYTES = 128 * 1024
"""glibc's initial threshold, kept."""


def return_large_buffers_when_freed() -> bool:
    """Fix the mmap threshold; True when the C library took it."""
    name = ctypes.util.find_library("c")
    try:
        mallopt = ctypes.CDLL(name).mallopt if name else None
    except (OSError, AttributeError):
        mallopt = None
    if mallopt is None:
        log.info("no glibc mallopt: large buffers are returned as the C library decides")
        return False
    return bool(mallopt(M_MMAP_THRESHOLD, LARGE_BUFFER_BYTES))
