"""The probes of redelivery: what a consumer did not acknowledge comes again, after a
negative acknowledgement, after the acknowledgement timeout, or to another consumer when
the one holding it closes."""

from __future__ import annotations

import pulsar

from harness.workloads.contract.clients import Clients, GroupSpec
from harness.workloads.contract.limits import (
    ACK_TIMEOUT_MS,
    ACK_TIMEOUT_WAIT_S,
    MESSAGES,
    NACK_DELAY_MS,
)
from harness.workloads.contract.receiving import (
    acknowledged,
    collect,
    receive,
    recorded,
    value_of,
)
from harness.workloads.contract.recording import Group, Member, in_order
from harness.workloads.official_client import acknowledge_unconfirmed


def nack(clients: Clients, group: Group) -> None:
    """Every other message negatively acknowledged on its first delivery: each must
    come again, with a redelivery count."""
    member = clients.subscribe(group, "c0", "nacks", "shared",
                               negative_ack_redelivery_delay_ms=NACK_DELAY_MS)
    values = group.values(MESSAGES)
    nacked = set(values[::2])
    again: dict[str, int] = {}
    acked: set[str] = set()

    def handle(member: Member, message: pulsar.Message) -> None:
        value = recorded(member, message)
        assert member.consumer is not None
        if value in nacked and value not in member.got[:-1]:
            member.consumer.negative_acknowledge(message)
            return
        if value in nacked:
            again[value] = max(again.get(value, 0), message.redelivery_count())
        acknowledge_unconfirmed(member.process, member.consumer, message, value,
                                member.fields)
        acked.add(value)

    clients.send(group, values)
    receive([member], handle, lambda: len(acked) == len(values))
    group.expect("nack-redelivered", in_order(values, nacked), in_order(values, again))
    group.expect("nack-redelivery-count", in_order(values, nacked),
                 in_order(values, [v for v, count in again.items() if count >= 1]))


def ack_timeout(clients: Clients, group: Group) -> None:
    """Two messages left unacknowledged past the acknowledgement timeout: both come
    again."""
    member = clients.subscribe(group, "c0", "timeouts", "shared",
                               unacked_messages_timeout_ms=ACK_TIMEOUT_MS)
    values = group.values(4)
    withheld = values[:2]
    again: set[str] = set()

    def handle(member: Member, message: pulsar.Message) -> None:
        value = recorded(member, message)
        assert member.consumer is not None
        if value in withheld and value not in member.got[:-1]:
            return  # left unacknowledged: the timeout must bring it back
        if value in withheld:
            again.add(value)
        acknowledge_unconfirmed(member.process, member.consumer, message, value,
                                member.fields)

    clients.send(group, values)
    receive([member], handle, lambda: again == set(withheld),
            quiet_s=ACK_TIMEOUT_WAIT_S, bound_s=ACK_TIMEOUT_WAIT_S)
    group.expect("ack-timeout-redelivered", withheld, in_order(values, again))


def closed_consumer(clients: Clients, group: Group) -> None:
    """Of two consumers of a Shared subscription, one takes five messages and closes
    without acknowledging them: the other gets them, and everything else."""
    leaving = clients.subscribe(group, "c0", "shared", "shared")
    staying = clients.subscribe(group, "c1", "shared", "shared")
    values = group.values(30)
    clients.send(group, values)
    held = in_order(values, [value_of(m) for m in collect(leaving, 5)])
    group.close_consumer(leaving)
    receive([staying], acknowledged, lambda: set(values) <= set(staying.got))
    group.expect("closed-consumer-redelivered", held,
                 in_order(values, set(held) & set(staying.got)))


GROUPS = (
    GroupSpec("nack", ("nack-redelivered", "nack-redelivery-count"), nack),
    GroupSpec("closed-consumer", ("closed-consumer-redelivered",), closed_consumer),
)
ACK_TIMEOUT_GROUP = GroupSpec("ack-timeout", ("ack-timeout-redelivered",), ack_timeout)
"""The group that runs beside the others: it mostly waits out the client's timeout."""
