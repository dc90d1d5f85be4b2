"""The probes of delayed delivery (PIP-26) on a Shared subscription: a message sent with
`deliver_after` and one sent with `deliver_at` are each held until their time, while a
message sent without delay beside them comes at once.

These hinge on the target's switches: Pulsar holds delayed messages only on Shared and
Key_Shared subscriptions (others get them at once, which is why the probe uses Shared),
and only with `delayedDeliveryEnabled` (its default). A message may come up to
`DELAY_SLACK_S` before its time (Pulsar's tick), and the client's clock is the one
`deliver_after` and `deliver_at` are read against, so the brokers' must agree with it."""

from __future__ import annotations

import time
from datetime import timedelta

import pulsar

from harness.workloads.contract.clients import Clients, GroupSpec
from harness.workloads.contract.limits import DELAY_S, DELAY_SLACK_S, QUIET_S
from harness.workloads.contract.receiving import acknowledged, receive
from harness.workloads.contract.recording import CouldNotRun, Group, Member

HELD = {"delivered": True, "held": True}


def delayed(clients: Clients, group: Group) -> None:
    """One message `deliver_after` DELAY_S, one `deliver_at` DELAY_S from now, one not
    delayed: each delayed one must come, and not before DELAY_S less the slack."""
    member = clients.subscribe(group, "c0", "delayed", "shared")
    after, at, undelayed = group.values(3)
    due = {after: time.monotonic() + DELAY_S}
    clients.send(group, [after], deliver_after=timedelta(seconds=DELAY_S))
    due[at] = time.monotonic() + DELAY_S
    sent = clients.send_once(group, at, deliver_at=int((time.time() + DELAY_S) * 1000))
    if sent.message_id is None:
        raise CouldNotRun(f"the send of {at} failed: {sent.error}")
    clients.send(group, [undelayed])
    arrived: dict[str, float] = {}

    def handle(member: Member, message: pulsar.Message) -> None:
        arrived.setdefault(acknowledged(member, message), time.monotonic())

    # Every message, the undelayed one too: a receiver that stops before it arrives (as
    # when delays are ignored and it comes last) would leave it for `lost` to report.
    receive([member], handle, lambda: {after, at, undelayed} <= set(arrived),
            quiet_s=DELAY_S + QUIET_S, bound_s=2 * DELAY_S + QUIET_S)
    for probe, value in (("deliver-after", after), ("deliver-at", at)):
        came = arrived.get(value)
        early_s = None if came is None else round(due[value] - came, 3)
        group.expect(probe, HELD, {
            "delivered": came is not None,
            "held": early_s is not None and early_s <= DELAY_SLACK_S}, early_s=early_s)


GROUPS = (GroupSpec("delayed", ("deliver-after", "deliver-at"), delayed),)
