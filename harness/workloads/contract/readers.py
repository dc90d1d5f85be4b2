"""The probes of positions: readers from the earliest message, a message id (after it, or
at it when inclusive) and the latest; a reader's `has_message_available` agreeing with
what `read_next` gives; a closed reader leaving no subscription behind; and consumers
seeking back to a message id and to a time, on an Exclusive subscription and on a Shared
one whose consumer holds messages unacknowledged. Each compares what was delivered with
what the position promises."""

from __future__ import annotations

import time
from typing import Any

import pulsar

from harness.workloads.contract.clients import Clients, GroupSpec
from harness.workloads.contract.limits import (
    CONFIRM_POLL_S,
    CONFIRM_S,
    OPERATION_TIMEOUT_S,
    SEEK_GAP_S,
    SETTLE_S,
)
from harness.workloads.contract.receiving import collect, receive, recorded, value_of
from harness.workloads.contract.recording import Group, Member, in_order
from harness.workloads.official_client import acknowledge_unconfirmed


def readers(clients: Clients, group: Group) -> None:
    """Readers from the earliest message, from a message id (exclusive, the client's
    default, and inclusive), and from the latest message (only what is sent after it
    starts); one that reads while `has_message_available` says there is more; then, all
    closed, no subscription left on the topic."""
    values = group.values(10)
    ids = clients.send(group, values)
    for probe, start, expected, options in (
            ("reader-earliest", pulsar.MessageId.earliest, values, {}),
            ("reader-message-id", ids[4], values[5:], {}),
            ("reader-message-id-inclusive", ids[4], values[4:],
             {"start_message_id_inclusive": True})):
        group.expect(probe, expected,
                     _read(clients, group, probe, start, expected[-1], **options))
    group.expect("reader-has-message-available", {"read": values, "ended": "unavailable"},
                 _read_while_available(clients, group, len(values)))
    later = group.values(3, first=len(values))
    reader = clients.reader(group, "reader-latest", pulsar.MessageId.latest)
    if isinstance(reader, Member):
        clients.send(group, later)
        receive([reader], recorded, lambda: later[-1] in reader.got, settle_s=SETTLE_S)
    group.expect("reader-latest", later, reader.got if isinstance(reader, Member) else reader)
    group.close()
    group.expect("reader-leaves-no-subscription", [], _subscriptions_left(clients, group))


def seek(clients: Clients, group: Group) -> None:
    """A consumer that read everything seeks back to a message id, then to a time:
    what follows the id, and what was published after the time."""
    member = clients.subscribe(group, "c0", "seek", "exclusive")
    values = group.values(10)
    ids = clients.send(group, values[:5])
    time.sleep(SEEK_GAP_S)
    since_ms = int(time.time() * 1000)
    time.sleep(SEEK_GAP_S)
    ids += clients.send(group, values[5:])
    collect(member, len(values))
    group.expect("seek-message-id", values[4:], _after_seek(member, ids[3], values, values[3]))
    group.expect("seek-timestamp", values[5:], _after_seek(member, since_ms, values, None))


def seek_shared(clients: Clients, group: Group) -> None:
    """A consumer of a Shared subscription holds every message, two of them acknowledged,
    and seeks back to a message id. As Pulsar's cursor reset has it, the subscription
    starts over there: what follows the id comes again, acknowledged or not (the reset
    forgets acknowledgements after it, and the broker what it had out at the consumer),
    and nothing before it, though never acknowledged (the reset acknowledges it)."""
    member = clients.subscribe(group, "c0", "seek", "shared")
    values = group.values(10)
    ids = clients.send(group, values)
    for message in collect(member, len(values)):
        value = value_of(message)
        if value in values[7:9]:
            assert member.consumer is not None
            acknowledge_unconfirmed(member.process, member.consumer, message, value,
                                    member.fields)
    group.expect("seek-shared-starts-over", values[4:],
                 _after_seek(member, ids[3], values, values[3]))


def _read(clients: Clients, group: Group, probe: str, start: Any, last: str,
          **options: Any) -> list[str] | dict[str, str]:
    """What a reader from `start` delivers, until `last` or quiet."""
    reader = clients.reader(group, probe, start, **options)
    if not isinstance(reader, Member):
        return reader
    receive([reader], recorded, lambda: last in reader.got, settle_s=SETTLE_S)
    return reader.got


def _read_while_available(clients: Clients, group: Group, count: int) -> dict[str, Any]:
    """A reader from the earliest message reads one message each time
    `has_message_available` says there is one, at most `count` + 1 times: what it read
    and why it ended (`unavailable`, `still-available`, or the error of a call)."""
    reader = clients.reader(group, "reader-has-message-available", pulsar.MessageId.earliest)
    if not isinstance(reader, Member):
        return reader
    assert reader.reader is not None
    try:
        for _ in range(count + 1):
            if not reader.reader.has_message_available():
                return {"read": reader.got, "ended": "unavailable"}
            recorded(reader, reader.receive(OPERATION_TIMEOUT_S * 1000))
    except pulsar.PulsarException as exc:
        return {"read": reader.got, "ended": type(exc).__name__}
    return {"read": reader.got, "ended": "still-available"}


def _subscriptions_left(clients: Clients, group: Group) -> list[str]:
    """The topic's subscriptions once its readers closed, polled for a while: a reader's
    subscription is the broker's to remove as the reader goes."""
    deadline = time.monotonic() + CONFIRM_S
    left = clients.subscriptions(group.topic)
    while left and time.monotonic() < deadline:
        time.sleep(CONFIRM_POLL_S * 10)
        left = clients.subscriptions(group.topic)
    return left


def _after_seek(member: Member, to: Any, values: list[str],
                sought: str | None) -> list[str] | dict[str, str]:
    """What the consumer gets after seeking to `to`, until the last value comes again,
    in the order sent. Pulsar's clients differ on whether the sought message itself comes
    again after a seek to its id, so it is dropped when it does."""
    assert member.consumer is not None
    start = len(member.got)
    try:
        member.consumer.seek(to)
    except pulsar.PulsarException as exc:
        return {"error": type(exc).__name__}
    receive([member], recorded, lambda: values[-1] in member.got[start:], settle_s=SETTLE_S)
    again = in_order(values, member.got[start:])
    return again[1:] if sought is not None and again[:1] == [sought] else again


GROUPS = (
    GroupSpec("reader", ("reader-earliest", "reader-message-id", "reader-message-id-inclusive",
                         "reader-has-message-available", "reader-latest",
                         "reader-leaves-no-subscription"), readers),
    GroupSpec("seek", ("seek-message-id", "seek-timestamp"), seek),
    GroupSpec("seek-shared", ("seek-shared-starts-over",), seek_shared),
)
