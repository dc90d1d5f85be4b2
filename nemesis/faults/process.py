"""Process faults: `kill` (SIGKILL, then start again) and `pause` (freeze, then resume)."""

from __future__ import annotations

import random
from typing import ClassVar

from nemesis.events import NemesisEvent
from nemesis.faults.base import OWNER, Fault, FaultContext


class Kill(Fault):
    """A crash: the node's processes die at once; its data stays for the restart."""

    name = "kill"
    strikes_several = True
    op = "kill"
    end_op = "start"
    keeps_sessions = True
    needs = frozenset({"kill"})
    defaults: ClassVar[tuple[str, ...]] = (OWNER, "broker")

    def inject(self, ctx: FaultContext, targets: tuple[str, ...],
               rng: random.Random) -> NemesisEvent:
        return ctx.processes.kill(ctx.nodes(targets))

    def end(self, ctx: FaultContext, targets: tuple[str, ...]) -> NemesisEvent:
        return ctx.processes.start(ctx.nodes(targets))


class Pause(Fault):
    """A long GC pause (PIP-57): sockets open, nothing answering."""

    name = "pause"
    strikes_several = True
    op = "pause"
    end_op = "resume"
    needs = frozenset({"pause"})
    defaults: ClassVar[tuple[str, ...]] = (OWNER, "broker")

    def inject(self, ctx: FaultContext, targets: tuple[str, ...],
               rng: random.Random) -> NemesisEvent:
        return ctx.processes.pause(ctx.nodes(targets))

    def end(self, ctx: FaultContext, targets: tuple[str, ...]) -> NemesisEvent:
        return ctx.processes.resume(ctx.nodes(targets))
