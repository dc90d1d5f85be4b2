"""The probes of positions: readers from the earliest message, a message id and the
latest, and a consumer seeking back to a message id and to a time. Each compares what
was delivered with what the position promises."""

from __future__ import annotations

import time
from typing import Any

import pulsar

from harness.workloads.contract.clients import Clients
from harness.workloads.contract.limits import SEEK_GAP_S, SETTLE_S
from harness.workloads.contract.receiving import collect, receive, recorded
from harness.workloads.contract.recording import Group, Member


def readers(clients: Clients, group: Group) -> None:
    """Readers from the earliest message, from a message id (exclusive, the client's
    default) and from the latest message (only what is sent after it starts)."""
    values = group.values(10)
    ids = clients.send(group, values)
    for probe, start, expected in (("reader-earliest", pulsar.MessageId.earliest, values),
                                   ("reader-message-id", ids[4], values[5:])):
        group.expect(probe, expected, _read(clients, group, probe, start, expected[-1]))
    later = group.values(3, first=len(values))
    reader = clients.reader(group, "reader-latest", pulsar.MessageId.latest)
    if isinstance(reader, Member):
        clients.send(group, later)
        receive([reader], recorded, lambda: later[-1] in reader.got, settle_s=SETTLE_S)
    group.expect("reader-latest", later, reader.got if isinstance(reader, Member) else reader)


def seek(clients: Clients, group: Group) -> None:
    """A consumer that read everything seeks back to a message id, then to a time:
    what follows the id (Pulsar's clients differ on whether the sought message itself
    comes again, so either is accepted), and what was published after the time."""
    member = clients.subscribe(group, "c0", "seek", "exclusive")
    values = group.values(10)
    ids = clients.send(group, values[:5])
    time.sleep(SEEK_GAP_S)
    since_ms = int(time.time() * 1000)
    time.sleep(SEEK_GAP_S)
    ids += clients.send(group, values[5:])
    collect(member, len(values))
    for probe, to, sought, expected in (
            ("seek-message-id", ids[3], values[3], values[4:]),
            ("seek-timestamp", since_ms, None, values[5:])):
        observed = _after_seek(member, to, values[-1])
        if isinstance(observed, list) and sought is not None and observed[:1] == [sought]:
            observed = observed[1:]
        group.expect(probe, expected, observed)


def _read(clients: Clients, group: Group, probe: str, start: Any,
          last: str) -> list[str] | dict[str, str]:
    """What a reader from `start` delivers, until `last` or quiet."""
    reader = clients.reader(group, probe, start)
    if not isinstance(reader, Member):
        return reader
    receive([reader], recorded, lambda: last in reader.got, settle_s=SETTLE_S)
    return reader.got


def _after_seek(member: Member, to: Any, last: str) -> list[str] | dict[str, str]:
    """What the consumer gets after seeking to `to`, until `last` comes again."""
    assert member.consumer is not None
    start = len(member.got)
    try:
        member.consumer.seek(to)
    except pulsar.PulsarException as exc:
        return {"error": type(exc).__name__}
    receive([member], recorded, lambda: last in member.got[start:], settle_s=SETTLE_S)
    return member.got[start:]
