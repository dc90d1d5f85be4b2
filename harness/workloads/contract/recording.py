"""What a group of probes records, and how: a `probe` operation per expectation, judged as
it is recorded; `info` for every probe of a group that could not run; the consumers and
readers whose deliveries are recorded; and the observations put in a form that does not
depend on the order the broker chose to deliver in."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulsar

from harness.workloads.base import WorkloadContext
from harness.workloads.official_client import close_quietly
from history.writer import ClientProcess, SequentialIds


class CouldNotRun(Exception):
    """A group's setup failed: its probes are undecided, not broken."""


@dataclass
class Member:
    """A consumer or reader whose deliveries are recorded under `fields`."""

    process: ClientProcess
    fields: dict[str, Any]
    receive: Callable[[int], pulsar.Message]
    consumer: pulsar.Consumer | None = None
    reader: pulsar.Reader | None = None
    got: list[str] = field(default_factory=list)
    """Values in the order they were delivered."""


class Group:
    """One attempt of a group of probes: its topic, the clients it closes at its end, and
    the probes it has yet to record. A group a fault kept from deciding runs again
    (`attempt` 2, 3, ...) on a topic of its own, with values of its own."""

    def __init__(self, context: WorkloadContext, ids: SequentialIds, base: str, name: str,
                 probes: tuple[str, ...], attempt: int = 1) -> None:
        self.name = name
        self.label = name if attempt == 1 else f"{name}-try{attempt}"
        """What names this attempt's topic and values, unique in the run."""
        self._began = time.monotonic()
        self._disturbed_since = context.disturbed_since
        self.disturbed = False
        """A probe of it differed from its expectation while a fault disturbed the group:
        it was recorded `info`, and what the group left unread is unknown."""
        self.topic = f"{base}-{self.label}"
        self.pending = list(probes)
        self.closables: list[pulsar.Producer | pulsar.Consumer | pulsar.Reader] = []
        self._process = ClientProcess(context.history, ids)
        self._fields = {"topic": self.topic, "cluster": context.cluster}

    def values(self, count: int, first: int = 0) -> list[str]:
        """Message ids unique in the run: the attempt's label and a number, from `first`."""
        return [f"{self.label}-{n}" for n in range(first, first + count)]

    def expect(self, probe: str, expected: Any, observed: Any, **extra: Any) -> None:
        """Record one expectation as judged: `ok` when `observed` equals `expected`, else
        `fail`; but `info` when a fault was on, or had just been, while the group ran (a
        client reconnecting, an owner changing, a broker shut down can each make an
        exchange differ, so the difference proves nothing of the contract)."""
        self._process.invoke("probe", value=probe, detail={"expected": expected},
                             **self._fields)
        detail = {"expected": expected, "observed": observed, **extra}
        if observed == expected:
            outcome = "ok"
        elif self.fault_struck():
            outcome, self.disturbed = "info", True
            detail["reason"] = "a fault struck while the probe's group ran"
        else:
            outcome = "fail"
        self._process.complete(outcome, value=probe, **self._fields, detail=detail)
        self.pending.remove(probe)

    def fault_struck(self) -> bool:
        """Whether a fault was on, or had just been, at any time since the group began."""
        return self._disturbed_since(self._began)

    def undecided(self, error: str, reason: str) -> None:
        """Every probe not yet recorded completes `info`: it could not run."""
        for probe in self.pending:
            self._process.invoke("probe", value=probe, **self._fields)
            self._process.complete("info", value=probe, error=error,
                                   detail={"reason": reason}, **self._fields)
        self.pending.clear()

    def close_consumer(self, member: Member) -> None:
        """Close a consumer before the group ends."""
        assert member.consumer is not None
        self.close_one(member.consumer)

    def close_one(self, closable: pulsar.Producer | pulsar.Consumer) -> None:
        """Close a producer or consumer before the group ends (the client refuses a
        second close)."""
        self.closables.remove(closable)
        close_quietly(closable)

    def close(self) -> None:
        """Close every producer, consumer and reader the group has (again empty after)."""
        closables, self.closables = self.closables, []
        for closable in reversed(closables):
            try:
                closable.close()
            except pulsar.PulsarException:
                pass


def in_order(values: Sequence[str], chosen: Iterable[str]) -> list[str]:
    """`chosen` in the order `values` were sent (anything else last), repeats kept: a
    comparison that does not depend on the order the broker chose to deliver in."""
    order = {value: n for n, value in enumerate(values)}
    return sorted(chosen, key=lambda value: order.get(value, len(order)))


def observed(call: Callable[[], Any]) -> Any:
    """The call's result, or the client's error as the observation."""
    try:
        return call()
    except pulsar.PulsarException as exc:
        return {"error": type(exc).__name__}
