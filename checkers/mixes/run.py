"""The run's schedule: how many messages over how long, and when everything but the
messages happens (the layouts, failovers, consumers and faults), planned from a spec."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from checkers.mixes.base import _SENDS_START, MIN_DURATION_S, MIN_FAILOVER_SPACING_S, S, _ns
from checkers.mixes.consumers import _Consumers, _plan_consumers, _plan_crashes
from checkers.mixes.faults import _Faults, _plan_faults
from checkers.mixes.layouts import _Layouts, _plan_layouts
from checkers.mixes.spec import MixSpec


@dataclass
class _Run:
    """When everything but the messages happens."""

    messages: int
    duration: int
    """Sends are invoked in [_SENDS_START, _SENDS_START + duration)."""
    layouts: _Layouts
    failovers: np.ndarray
    """Invoke times; the first goes from a to b, the next back, ..."""
    failover_done: np.ndarray
    consumers: _Consumers
    faults: _Faults

    @property
    def sends_end(self) -> int:
        return _SENDS_START + self.duration

    def consuming(self, times: np.ndarray) -> np.ndarray:
        """The cluster `live` is read in at each time."""
        return np.asarray(np.searchsorted(self.failovers, times, side="right") % 2, np.int64)

    @property
    def final_cluster(self) -> int:
        return len(self.failovers) % 2

    def failover_near(self, low: np.ndarray, high: np.ndarray) -> np.ndarray:
        """Whether a failover is invoked in [low, high]."""
        return np.searchsorted(self.failovers, high, side="right") > np.searchsorted(
            self.failovers, low, side="left")


def _events_per_message(spec: MixSpec) -> float:
    """Events one message brings, on average: its send's two; its deliveries in `live`
    and an ack's two; a delivery and an ack's two in `audit`."""
    return 2 + 1 / (1 - spec.redelivery) + 2 + 3


def _plan_run(spec: MixSpec, rng: np.random.Generator) -> _Run:
    if not 0 <= spec.redelivery < 1:
        raise ValueError(f"redelivery must be in [0, 1), not {spec.redelivery}")
    if spec.producers < 1 or spec.consumers < 1 or spec.keys_per_producer < 1:
        raise ValueError("a mix needs at least one producer, one consumer and one key")
    if spec.key_bytes < 0 or spec.value_bytes < 0:
        raise ValueError("key_bytes and value_bytes cannot be negative")
    messages = max(1, round(spec.events / _events_per_message(spec)))
    duration = max(MIN_DURATION_S * S, int(messages / spec.rate * S))
    spacing = duration / (spec.failovers + 1)
    if spacing < MIN_FAILOVER_SPACING_S * S:
        raise ValueError(f"{spec.failovers} failovers cannot be {MIN_FAILOVER_SPACING_S} s "
                         f"apart in a run of {duration / S:.0f} s")
    failovers = _ns(_SENDS_START + spacing * (np.arange(1, spec.failovers + 1)
                                              + rng.uniform(-0.2, 0.2, spec.failovers)))
    crashes = _plan_crashes(spec, rng, duration, failovers)
    consumers, failover_done = _plan_consumers(spec, rng, failovers, crashes)
    layouts = _plan_layouts(spec, rng, duration)
    faults = _plan_faults(spec, rng, duration)
    return _Run(messages, duration, layouts, failovers, failover_done, consumers, faults)
