"""The receive loop every probe reads through, and what it does with each delivery:
record it, acknowledge it, keep it. Bounded in time whatever the broker sends."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import pulsar

from harness.workloads.contract.limits import POLL_MS, QUIET_S, RECEIVE_BOUND_S
from harness.workloads.contract.recording import CouldNotRun, Member
from harness.workloads.official_client import acknowledge_unconfirmed, record_delivery


def value_of(message: pulsar.Message) -> str:
    """The value a message carries (bytes that do not decode replaced)."""
    value: str = message.data().decode(errors="replace")
    return value


def receive(members: Sequence[Member], handle: Callable[[Member, pulsar.Message], object],
            done: Callable[[], bool], *, settle_s: float = 0.0, quiet_s: float = QUIET_S,
            bound_s: float = RECEIVE_BOUND_S) -> None:
    """Poll the members in turn, handing each message to `handle`, until `done()`
    (then `settle_s` more, for anything that should not come), nothing for `quiet_s`,
    or `bound_s` in all."""
    started = last = time.monotonic()
    settled: float | None = None
    while True:
        now = time.monotonic()
        if settled is None and done():
            settled = now + settle_s
        if ((settled is not None and now >= settled) or now - last >= quiet_s
                or now - started >= bound_s):
            return
        for member in members:
            try:
                message = member.receive(POLL_MS)
            except pulsar.Timeout:
                continue
            last = time.monotonic()
            handle(member, message)


def recorded(member: Member, message: pulsar.Message) -> str:
    """Record a delivery, acknowledging nothing."""
    value = record_delivery(member.process, message, member.fields)
    member.got.append(value)
    return value


def acknowledged(member: Member, message: pulsar.Message) -> str:
    """Record a delivery and acknowledge it (`info`: unconfirmed)."""
    value = recorded(member, message)
    assert member.consumer is not None
    acknowledge_unconfirmed(member.process, member.consumer, message, value, member.fields)
    return value


def collect(member: Member, count: int) -> list[pulsar.Message]:
    """`count` deliveries, recorded and not acknowledged; fewer is a setup failure."""
    messages: list[pulsar.Message] = []

    def keep(member: Member, message: pulsar.Message) -> None:
        recorded(member, message)
        messages.append(message)

    receive([member], keep, lambda: len(messages) >= count)
    if len(messages) < count:
        raise CouldNotRun(f"{member.fields['consumer']} received {len(messages)} of "
                          f"{count} messages")
    return messages

