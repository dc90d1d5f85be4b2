"""A workload's settings, as the scenario's `[workload]` table gives them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

from harness.workloads.knobs import Knobs, knob

K = TypeVar("K", bound=Knobs)

SUBSCRIPTION_MODES = ("exclusive", "failover", "shared", "key_shared")
SINGLE_ACTIVE_MODES = ("exclusive", "failover")
"""The modes in which one consumer reads at a time, however many are attached."""


@dataclass(frozen=True)
class WorkloadSettings:
    """The scenario's `[workload]` table: which workload drives the clients, the knobs every
    workload reads (declared here), and the knobs of that workload (declared by its class,
    harness/workloads/registry.py)."""

    kind: str = "scalable"
    rate: int = knob(100, "Operations per second across all clients.", least=1)
    """Every load loop is bounded."""
    keys: int = knob(16, "How many keys the producers' messages carry.", least=1)
    producers: int = knob(2, "Producers of the workload.", least=1)
    consumers: int = knob(2, "Consumers of each subscription the consumers read.", least=1)
    drain_quiet_s: float = knob(3.0, "The final drain ends once no consumer has received "
                                     "anything for this long.", least=0)
    drain_timeout_s: float = knob(60.0, "...or, still receiving (or with a backlog left), "
                                        "gives up after this long: `info`.", least=0)
    knobs: Knobs = field(default_factory=Knobs)
    """The knobs of the workload `kind` names, as its class declares them; the base `Knobs`
    (settings made in code rather than read from a scenario) stands for every default."""

    def knobs_as(self, declared: type[K]) -> K:
        """The workload's knobs as `declared`, the `Knobs` class its reader declares or a base
        of it (the knobs several workloads share)."""
        if isinstance(self.knobs, declared):
            return self.knobs
        if type(self.knobs) is Knobs:
            return declared()
        raise TypeError(f"the {self.kind} workload's knobs are {type(self.knobs).__qualname__}, "
                        f"not {declared.__qualname__}")
