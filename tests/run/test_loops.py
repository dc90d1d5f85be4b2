"""The moments of occasional events (a consumer's crash) follow from the seed, and their
count is bounded whatever the clock does."""

from __future__ import annotations

import random
import threading
import time

from harness.workloads.loops import seeded_moments


class _Instant(threading.Event):
    """A stop that is never set and never sleeps: it remembers each wait asked of it."""

    def __init__(self) -> None:
        super().__init__()
        self.waits: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        assert timeout is not None
        self.waits.append(timeout)
        return False


def _waits(seed: str, interval: float, horizon_s: float) -> list[float]:
    stop = _Instant()
    list(seeded_moments(random.Random(seed), interval, time.monotonic() + horizon_s, stop))
    return stop.waits


def test_the_same_seed_gives_the_same_moments_about_the_interval_apart() -> None:
    waits = _waits("1:crash", 3.0, 12.0)
    assert waits == _waits("1:crash", 3.0, 12.0) != _waits("2:crash", 3.0, 12.0)
    assert all(1.5 <= wait <= 4.5 for wait in waits)


def test_the_count_is_bounded_by_the_shortest_wait() -> None:
    """Waits that take no time still end: at most one moment per half interval."""
    assert len(_waits("1:crash", 3.0, 12.0)) <= 12.0 / 1.5 + 1


def test_an_interval_of_zero_is_a_knob_switched_off() -> None:
    """`layout_interval_s = 0` (like `crash_interval_s = 0`) means no moments at all, not
    a division by zero in the driver's thread."""
    stop = _Instant()
    assert list(seeded_moments(random.Random("1:layout"), 0.0, time.monotonic() + 5, stop)) == []
    assert stop.waits == []
