"""The loops every workload runs the same way, whatever client drives the cluster: paced and
bounded producer slots, seeded moments for occasional events (a split, a crash), producer
threads joined by the deadline, and the final drain that waits for quiet consumers and an
empty backlog."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping

from harness.workloads.base import WorkloadContext
from harness.workloads.plan import Pacer

DRAIN_POLL_S = 0.2


def paced_slots(per_second: float, deadline: float, stop: threading.Event,
                phase: float = 0.0) -> Iterator[int]:
    """One slot per `1/per_second` seconds until `deadline` or `stop`, the first after
    `phase` (a fraction of the interval: workers of one rate given phases `n/workers`
    interleave their operations instead of starting them together); never more slots
    than the pace allows in the time left, so the loop is bounded in count as in time."""
    if stop.wait(phase / per_second):
        return
    pacer = Pacer(per_second)
    bound = int(per_second * (deadline - time.monotonic())) + 1
    for slot in range(bound):
        if not pacer.wait(stop, deadline):
            return
        yield slot


def seeded_moments(rng: random.Random, interval: float, deadline: float,
                   stop: threading.Event) -> Iterator[int]:
    """Moments about `interval` apart (each wait drawn from `rng`, between half and one and
    a half intervals) until `deadline` or `stop`: a seed gives the same moments, and the
    count is bounded by the shortest wait. An interval of 0 (a knob switched off) gives
    none."""
    if interval <= 0:
        return
    bound = int((deadline - time.monotonic()) / (interval / 2)) + 1
    for moment in range(bound):
        if stop.wait(rng.uniform(0.5, 1.5) * interval) or time.monotonic() >= deadline:
            return
        yield moment


def run_workers(work: Callable[[int], None], count: int, name: str, deadline: float,
                grace_s: float) -> None:
    """`work(n)` for n in range(count), each in its own thread; returns once all finished,
    or `grace_s` after the deadline (an operation outstanding then ends within its own
    timeout)."""
    threads = [threading.Thread(target=work, args=(n,), name=f"{name}-{n}", daemon=True)
               for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()) + grace_s)


class DeliveryClock:
    """When a consumer last received anything, shared by every consumer of a workload."""

    def __init__(self) -> None:
        self._last = time.monotonic()
        self._lock = threading.Lock()

    def tick(self) -> None:
        with self._lock:
            self._last = time.monotonic()

    @property
    def last(self) -> float:
        with self._lock:
            return self._last


def drain_fields(context: WorkloadContext) -> dict[str, str]:
    """The fields of the harness's `drain` events."""
    return {"value": context.topic, "topic": context.topic, "cluster": context.cluster}


def wait_until_drained(context: WorkloadContext, started: float, clock: DeliveryClock,
                       backlogs: Callable[[], Mapping[str, int] | None]) -> bool:
    """Complete the `drain` (its invoke recorded at `started`): `ok` once nothing was
    received for `drain_quiet_s` and `backlogs()` answers with nothing left anywhere;
    `info` with what was left after `drain_timeout_s`."""
    settings = context.settings
    deadline = started + settings.drain_timeout_s
    fields = drain_fields(context)
    left: Mapping[str, int] | None = None
    while True:
        now = time.monotonic()
        quiet = now - max(clock.last, started)
        if quiet >= settings.drain_quiet_s:
            left = backlogs()
            if left is not None and not any(left.values()):
                context.history.record("harness", "ok", "drain", **fields)
                return True
        if now > deadline:
            context.history.record("harness", "info", "drain", error="timeout",
                                   detail={"backlogs": left, "quiet_s": round(quiet, 3)},
                                   **fields)
            return False
        time.sleep(DRAIN_POLL_S)
