"""The probes of a subscription as a queue: more messages than the receiver queue on every
subscription type, batched and not, judged by the ordinary checkers; and acknowledgements,
individual and cumulative, that a consumer reconnecting to the subscription must honour."""

from __future__ import annotations

from harness.workloads.contract.clients import Clients, GroupSpec, Probe
from harness.workloads.contract.limits import MESSAGES, QUEUE_MESSAGES, SETTLE_S
from harness.workloads.contract.receiving import (
    acknowledged,
    collect,
    receive,
    recorded,
    value_of,
)
from harness.workloads.contract.recording import CouldNotRun, Group, in_order
from harness.workloads.settings import SUBSCRIPTION_MODES


def queue_probe(mode: str, batched: bool) -> Probe:
    """Many more messages than the receiver queue, on one subscription of `mode`
    (two consumers where the mode lets both receive or stand by), batched or not:
    judged by the ordinary checkers alone. Its consumers may stop short of everything
    sent when a fault holds the subscription up past the receive loop's bounds: the group
    could not run then (a reconnection, not a loss); without a fault, `lost` judges
    what they never got."""
    def probe(clients: Clients, group: Group) -> None:
        count = 1 if mode == "exclusive" else 2
        members = [clients.subscribe(group, f"c{n}", "queue", mode) for n in range(count)]
        values = group.values(QUEUE_MESSAGES)
        if batched:
            clients.send_batched(group, values, key_based=mode == "key_shared")
        else:
            clients.send(group, values)

        def unread() -> set[str]:
            return set(values).difference(*(m.got for m in members))

        receive(members, acknowledged, lambda: not unread())
        if unread() and group.fault_struck():
            raise CouldNotRun(f"the consumers read {len(values) - len(unread())} of "
                              f"{len(values)} messages while a fault struck")
    return probe


def ack_individual(clients: Clients, group: Group) -> None:
    """Every other message acknowledged individually, each confirmed by the broker;
    a consumer reconnecting to the Shared subscription gets the rest, none of those."""
    first = clients.subscribe(group, "c0", "acks", "shared")
    values = group.values(MESSAGES)
    clients.send(group, values)
    messages = collect(first, len(values))
    for n, message in enumerate(messages[::2]):
        clients.acknowledge_confirmed(group, first, message, backlog=len(values) - n - 1)
    group.close_consumer(first)
    unacknowledged = in_order(values, [value_of(m) for m in messages[1::2]])
    again = clients.subscribe(group, "c1", "acks", "shared")
    receive([again], acknowledged, lambda: set(unacknowledged) <= set(again.got),
            settle_s=SETTLE_S)
    group.expect("ack-individual-resume", unacknowledged, in_order(values, again.got))


def ack_cumulative(clients: Clients, group: Group) -> None:
    """The first half acknowledged by one cumulative acknowledgement, confirmed; a
    consumer reconnecting to the Exclusive subscription resumes after it."""
    first = clients.subscribe(group, "c0", "acks", "exclusive")
    values = group.values(MESSAGES)
    clients.send(group, values)
    messages = collect(first, len(values))
    half = len(values) // 2
    clients.acknowledge_confirmed(group, first, messages[half - 1], backlog=half,
                                  cumulative=True)
    group.close_consumer(first)
    again = clients.subscribe(group, "c1", "acks", "exclusive")
    receive([again], recorded, lambda: values[-1] in again.got, settle_s=SETTLE_S)
    group.expect("ack-cumulative-resume", values[half:], again.got)


GROUPS = (
    *(GroupSpec(f"queue-{mode.replace('_', '-')}-{'batched' if batched else 'single'}", (),
                queue_probe(mode, batched))
      for mode in SUBSCRIPTION_MODES for batched in (False, True)),
    GroupSpec("ack-individual", ("ack-individual-resume",), ack_individual),
    GroupSpec("ack-cumulative", ("ack-cumulative-resume",), ack_cumulative),
)
