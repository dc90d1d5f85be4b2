"""SIGTERM as an interrupt, so that a terminated harness tears down as a Ctrl-C'd one does.

Python turns SIGINT into KeyboardInterrupt, which unwinds the stack and runs every
`finally` and `__exit__` (our teardowns); SIGTERM's default is to die on the spot. While
this context is active SIGTERM raises KeyboardInterrupt too. SIGKILL cannot be caught:
the reaper (harness/targets/docker/reaper.py) and `starquake cluster down` cover it.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt("SIGTERM")


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """Main thread only (Python's rule for signal handlers)."""
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
