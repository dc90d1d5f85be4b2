"""`ContractWorkload`: the client, the groups of probes in the order they run, each on a
topic of its own and recorded `info` when it could not run, and the drain.

The probes run in sequence, except the acknowledgement timeout's, which waits out the
client's minimum of 10 s and so runs beside the others. Every loop is bounded in count
and time; a group that cannot finish records its probes `info`, and the drain then ends
`info` too (its consumers may not have read all they would have).
"""

from __future__ import annotations

import logging
import threading
import time
import uuid

from harness.workloads.base import WorkloadContext
from harness.workloads.contract.clients import Clients, Probe
from harness.workloads.contract.limits import ACK_TIMEOUT_WAIT_S, RECEIVE_BOUND_S, SETUP_S
from harness.workloads.contract.queues import ack_cumulative, ack_individual, queue_probe
from harness.workloads.contract.readers import readers, seek
from harness.workloads.contract.recording import Group
from harness.workloads.contract.redelivery import ack_timeout, closed_consumer, nack
from harness.workloads.contract.termination import terminate
from harness.workloads.loops import drain_fields
from harness.workloads.settings import SUBSCRIPTION_MODES
from history.writer import SequentialIds

log = logging.getLogger(__name__)

GroupSpec = tuple[str, tuple[str, ...], Probe]
"""A group's name, its probes and what runs it."""

ACK_TIMEOUT_GROUP: GroupSpec = ("ack-timeout", ("ack-timeout-redelivered",), ack_timeout)
"""The group that runs beside the others (it mostly waits)."""

GROUPS: tuple[GroupSpec, ...] = (
    *((f"queue-{mode.replace('_', '-')}-{'batched' if batched else 'single'}", (),
       queue_probe(mode, batched))
      for mode in SUBSCRIPTION_MODES for batched in (False, True)),
    ("ack-individual", ("ack-individual-resume",), ack_individual),
    ("ack-cumulative", ("ack-cumulative-resume",), ack_cumulative),
    ("nack", ("nack-redelivered", "nack-redelivery-count"), nack),
    ("closed-consumer", ("closed-consumer-redelivered",), closed_consumer),
    ("reader", ("reader-earliest", "reader-message-id", "reader-latest"), readers),
    ("seek", ("seek-message-id", "seek-timestamp"), seek),
    ("terminate", ("last-message-id", "terminate-last-position", "terminated-refuses-send",
                   "terminated-refuses-producer"), terminate),
)
"""Every other group, in the order it runs."""


class ContractWorkload:
    def __init__(self, context: WorkloadContext) -> None:
        self.context = context
        self._ids = SequentialIds("p")
        self._base = f"{context.topic}-{uuid.uuid4().hex[:8]}"
        self._clients = Clients(context, self._ids)
        self._unfinished: list[str] = []
        """Groups that could not finish: their consumers may not have read everything."""

    def open(self) -> None:
        """Only the client: every group subscribes on its own topic when it runs."""
        self._clients.connect()

    def run(self, deadline: float, stop: threading.Event) -> None:
        """The acknowledgement timeout's group in a thread of its own (it mostly waits),
        every other group in sequence; a group that no longer fits before `deadline`, or
        after `stop`, records its probes `info` (`not-run`)."""
        waiting = threading.Thread(target=self._run_group, args=ACK_TIMEOUT_GROUP,
                                   name="contract-ack-timeout", daemon=True)
        waiting.start()
        for name, probes, probe in GROUPS:
            if stop.is_set() or time.monotonic() > deadline:
                self._group(name, probes).undecided("not-run", "the run ended before it")
                continue
            self._run_group(name, probes, probe)
        waiting.join(ACK_TIMEOUT_WAIT_S + SETUP_S + RECEIVE_BOUND_S)

    def _group(self, name: str, probes: tuple[str, ...]) -> Group:
        return Group(self.context, self._ids, self._base, name, probes)

    def _run_group(self, name: str, probes: tuple[str, ...], probe: Probe) -> None:
        group = self._group(name, probes)
        try:
            probe(self._clients, group)
        except Exception as exc:  # a client's, the admin API's or the harness's own:
            # whatever stopped the group, its probes are undecided, never passed.
            log.warning("contract probe group %s could not run: %s", name, exc)
            self._unfinished.append(name)
            group.undecided(type(exc).__name__, str(exc))
        finally:
            group.close()

    def drain(self) -> bool:
        """Every group read all it would before it ended, so the drain is over at once:
        `ok`, or `info` (`probe-aborted`) when a group could not finish."""
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
