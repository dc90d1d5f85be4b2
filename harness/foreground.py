"""Running something in the foreground until Ctrl-C or SIGTERM, then stopping it cleanly.

The handlers are installed before anything starts, so a signal arriving during start-up
still ends in a clean stop rather than in orphaned processes; the wait is timed so the
main thread regularly returns to Python to run them.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType


@contextmanager
def stop_on_signal() -> Iterator[threading.Event]:
    """Yields an event set by SIGINT or SIGTERM; the previous handlers come back after."""
    requested = threading.Event()

    def request_stop(_signum: int, _frame: FrameType | None) -> None:
        requested.set()

    previous = {s: signal.signal(s, request_stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield requested
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def wait_until(requested: threading.Event, also: Callable[[], bool] = lambda: False) -> None:
    """Block until `requested` is set or `also()` holds (checked twice a second)."""
    while not requested.wait(0.5):
        if also():
            return
