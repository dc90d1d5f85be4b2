"""What producers send, fixed by the run seed: keys drawn from a seeded source, message ids
unique across the run, and the pacing that keeps every loop within the scenario's rate."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator


def message_plan(seed: int, worker: int, keys: int) -> Iterator[tuple[str, str]]:
    """(key, message id) pairs of producer `worker`. Ids are `w<worker>-<n>`, so they are
    unique across the run whatever process id the worker records under; the key sequence
    is the same for every run with this seed."""
    rng = random.Random(f"{seed}:workload:{worker}")
    n = 0
    while True:
        yield f"k{rng.randrange(keys)}", f"w{worker}-{n}"
        n += 1


class Pacer:
    """Spaces operations `interval` seconds apart; a worker that fell behind (a send that
    waited out a fault) resumes at the pace rather than bursting to catch up."""

    def __init__(self, per_second: float) -> None:
        self.interval = 1.0 / per_second
        self._next = time.monotonic()

    def wait(self, stop: threading.Event, deadline: float) -> bool:
        """Sleep until the next slot; False when `stop` or `deadline` comes first."""
        now = time.monotonic()
        self._next = max(self._next + self.interval, now)
        until = min(self._next, deadline)
        if stop.wait(max(0.0, until - now)):
            return False
        return time.monotonic() < deadline
