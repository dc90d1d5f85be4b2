"""`ContractWorkload`: the client, the groups of probes in the order they run, each on a
topic of its own and recorded `info` when it could not run, and the drain.

The groups come from the modules of probes (each lists its own in `GROUPS`) and run in
sequence, except the acknowledgement timeout's, which waits out the client's minimum of
10 s and so runs beside the others. A group a fault kept from deciding runs again while
the load lasts. Every loop is bounded in count
and time; a group that cannot finish records its probes `info`, and the drain then ends
`info` too (its consumers may not have read all they would have). So does a group a fault
disturbed, whose differing probes complete `info` (`recording.Group.expect`).
`AuthWorkload` is the same machinery running the authentication probes alone (the `auth`
workload).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from dataclasses import dataclass

from harness.workloads.base import WorkloadContext
from harness.workloads.contract import (
    auth,
    dedup,
    delayed,
    large,
    producers,
    queues,
    readers,
    redelivery,
    refusal,
    schemas,
    termination,
    topics,
)
from harness.workloads.contract.clients import Clients, GroupSpec
from harness.workloads.contract.limits import ACK_TIMEOUT_WAIT_S, RECEIVE_BOUND_S, SETUP_S
from harness.workloads.contract.recording import Group
from harness.workloads.knobs import Knobs, knob
from harness.workloads.loops import drain_fields
from history.writer import SequentialIds

log = logging.getLogger(__name__)

GROUPS: tuple[GroupSpec, ...] = (
    *queues.GROUPS, *redelivery.GROUPS, *readers.GROUPS, *producers.GROUPS,
    *delayed.GROUPS, *large.GROUPS, *topics.GROUPS, *schemas.GROUPS, *dedup.GROUPS,
    *refusal.GROUPS, *termination.GROUPS)
"""Every group that runs in sequence, in the order it runs: a new module of probes adds
its `GROUPS` here."""
BESIDE: tuple[GroupSpec, ...] = (redelivery.ACK_TIMEOUT_GROUP,)
"""The groups that run each in a thread of its own beside the others (they mostly wait)."""
ROUND_PAUSE_S = 1.0
"""How often a round of groups to run again looks whether the faults have left a calm."""
PARTITION_INFIX = "-partition-"
GROUP_NAMES = tuple(spec.name for spec in (*GROUPS, *BESIDE))


def selected_groups(names: tuple[str, ...]) -> tuple[tuple[GroupSpec, ...], tuple[GroupSpec, ...]]:
    """The groups (in sequence, beside) a scenario's `[workload] groups` names, every
    group when it names none. Names are checked when the scenario loads (`GROUP_NAMES`)."""
    if not names:
        return GROUPS, BESIDE
    return (tuple(spec for spec in GROUPS if spec.name in names),
            tuple(spec for spec in BESIDE if spec.name in names))


class ContractWorkload:
    @dataclass(frozen=True)
    class Knobs(Knobs):
        groups: tuple[str, ...] = knob((), "The probe groups to run, by name (all when "
                                           "empty).", choices=GROUP_NAMES)
        """A scenario about one promise runs only the probes of that promise."""

    def __init__(self, context: WorkloadContext, groups: tuple[GroupSpec, ...] | None = None,
                 beside: tuple[GroupSpec, ...] = BESIDE) -> None:
        """The groups the scenario's `groups` knob names, unless `groups` and `beside` narrow
        the run to some (a test of a few probes)."""
        if groups is None:
            groups, beside = selected_groups(context.settings.knobs_as(ContractWorkload.Knobs)
                                             .groups)
        self.context = context
        self._groups = groups
        self._beside = beside
        self._ids = SequentialIds("p")
        # Pulsar reserves `-partition-` for the partitions of a partitioned topic and refuses
        # to create one whose name holds it: a scenario named so must not keep the
        # partitioned group from running.
        self._base = f"{context.topic.replace(PARTITION_INFIX, '-')}-{uuid.uuid4().hex[:8]}"
        self._clients = Clients(context, self._ids)
        self._unfinished: list[str] = []
        """Groups that could not finish: their consumers may not have read everything."""

    @property
    def topic(self) -> str:
        return self.context.topic

    def open(self) -> None:
        """Only the client: every group subscribes on its own topic when it runs."""
        self._clients.connect()

    def run(self, deadline: float, stop: threading.Event) -> None:
        """The groups `beside` each in a thread of its own, every other group in
        sequence, each round after round as `_rounds` says."""
        waiting = [threading.Thread(target=self._rounds, args=((spec,), deadline, stop),
                                    name=f"contract-{spec.name}", daemon=True)
                   for spec in self._beside]
        for thread in waiting:
            thread.start()
        self._rounds(self._groups, deadline, stop)
        for thread in waiting:
            thread.join(ACK_TIMEOUT_WAIT_S + SETUP_S + RECEIVE_BOUND_S)

    def _rounds(self, specs: tuple[GroupSpec, ...], deadline: float,
                stop: threading.Event) -> None:
        """`specs` in sequence; then, while the load lasts, again on new topics, the groups
        a fault kept from deciding, once the faults leave a calm, until each decides. A
        probe a fault struck says nothing, and under a random schedule a group's first
        run is often struck: its next one may fall between faults. In the first round a
        group that no longer fits before `deadline`, or after `stop`, records its probes
        `info` (`not-run`); a later round's simply does not run, as its first attempt is
        already recorded."""
        attempt = 1
        while specs:
            again = []
            for spec in specs:
                if stop.is_set() or time.monotonic() > deadline:
                    if attempt == 1:
                        self._group(spec, attempt).undecided("not-run", "the run ended before it")
                    continue
                if self._run_group(spec, attempt):
                    again.append(spec)
            specs, attempt = tuple(again), attempt + 1
            if specs:
                self._await_calm(deadline, stop)

    def _await_calm(self, deadline: float, stop: threading.Event) -> None:
        """Until no fault is on or has just been (a round begun sooner would be struck as
        well), the load ends, or `stop`."""
        while not stop.wait(ROUND_PAUSE_S) and time.monotonic() < deadline:
            if not self.context.disturbed_since(time.monotonic()):
                return

    def _group(self, spec: GroupSpec, attempt: int) -> Group:
        return Group(self.context, self._ids, self._base, spec.name, spec.probes, attempt)

    def _run_group(self, spec: GroupSpec, attempt: int) -> bool:
        """Run one attempt of a group; whether a fault kept it from deciding."""
        group = self._group(spec, attempt)
        excused = False
        try:
            spec.run(self._clients, group)
        except Exception as exc:  # a client's, the admin API's or the harness's own:
            # whatever stopped the group, its probes are undecided, never passed.
            log.warning("contract probe group %s could not run: %s", group.label, exc)
            self._unfinished.append(group.label)
            group.undecided(type(exc).__name__, str(exc))
            excused = group.fault_struck()
        else:
            if group.disturbed:
                self._unfinished.append(group.label)
                excused = True
        finally:
            group.close()
        return excused

    def drain(self) -> bool:
        """Every group read all it would before it ended, so the drain is over at once:
        `ok`, or `info` (`probe-aborted`) when a group could not finish or a fault
        disturbed one whose probe then differed."""
        fields = drain_fields(self.context)
        self.context.history.record("harness", "invoke", "drain", **fields)
        if self._unfinished:
            self.context.history.record("harness", "info", "drain", error="probe-aborted",
                                        detail={"groups": self._unfinished}, **fields)
            return False
        self.context.history.record("harness", "ok", "drain", **fields)
        return True

    def close(self) -> None:
        self._clients.close()


class AuthWorkload(ContractWorkload):
    """The `auth` workload: the client contract's authentication probes alone
    (harness/workloads/contract/auth.py), which need a target that requires credentials."""

    @dataclass(frozen=True)
    class Knobs(Knobs):
        """None of its own: it runs every authentication probe."""

    def __init__(self, context: WorkloadContext) -> None:
        super().__init__(context, auth.GROUPS, beside=())
