"""Faults aimed at a scalable topic's controller leader (PIP-468 leader failover): the
broker leading the controller when the fault starts, asked of the brokers then."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from nemesis.faults.base import CONTROLLER_LEADER, Fault, FaultPlanError, Surface
from nemesis.faults.partitions import Isolate
from nemesis.faults.process import Kill


class _ControllerFault(Fault):
    defaults: ClassVar[tuple[str, ...]] = (CONTROLLER_LEADER,)

    def check(self, surface: Surface, key: str) -> None:
        if not surface.controller:
            raise FaultPlanError(f"{key}: {self.name} needs a scalable topic's controller; "
                                 f"only the scalable workload has one")

    def check_targets(self, surface: Surface, key: str, targets: Sequence[str]) -> None:
        if list(targets) != [CONTROLLER_LEADER]:
            raise FaultPlanError(f"{key}: {self.name} acts on the controller leader only, "
                                 f"got {list(targets)}")


class KillControllerLeader(_ControllerFault, Kill):
    """The controller leader crashes; another broker must take over and roll forward."""

    name = "kill-controller-leader"
    op = "kill-leader"


class IsolateControllerLeader(_ControllerFault, Isolate):
    """The controller leader cut from every other node: it must stop acting as leader."""

    name = "isolate-controller-leader"
