"""Acknowledgements confirmed through the subscription's durable cursor.

The official Python client gives no receipt for an acknowledgement: it groups acks and
sends them later, and never says whether the broker applied them. The broker's cursor
does say it: once a message's position is at or below the subscription's mark-delete
position, or inside one of its individually deleted ranges, the subscription holds it as
acknowledged, whoever moved it there. A cumulative acknowledgement promises everything up
to its message: only a mark-delete position at or past it confirms one. So a workload
leaves each `ack` pending (each on a client process of its own, taken from a pool), and a
`CursorObserver` reads every watched subscription's cursor through the admin API about
every `POLL_S` while the workload runs, and once more after the drain. Each reading is
recorded as a `cursor` observation, and
every pending ack invoked before the reading began whose delivered position it covers
completes `ok` with `detail` `{"confirmed_by": "cursor"}`. What no reading ever covered
completes `info` (`error` `unconfirmed`) when the observer finishes.

Each round of readings starts at the next broker of the cluster in turn (one that does not
own the topic redirects to the broker it takes for the owner). A reader that always asked
the same broker first would only ever learn that broker's idea of who owns the topic: two
brokers that both believe they own it, each serving its own clients, would go unseen.

A position means something only in its own cluster: an ack is confirmed only by its own
cluster's cursor of its own topic and subscription.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.workloads.stats import TIMEOUT, first_answer, topic_path
from history.cursor import (
    CursorReading,
    Position,
    parse_position,
    parse_ranges,
    position_text,
)
from history.writer import ClientProcess, HistoryWriter, SequentialIds

POLL_S = 0.75
"""How often each watched subscription's cursor is read while the workload runs."""
CONFIRMED = {"confirmed_by": "cursor"}

Scope = tuple[str, str, str]
"""(cluster, topic, subscription): where a position and an acknowledgement mean something."""


@dataclass(frozen=True)
class PendingAck:
    """An `ack` invoked and not yet completed."""

    process: ClientProcess
    position: Position | None
    fields: dict[str, Any]
    cumulative: bool = False
    """Confirmed by the mark-delete position alone (the module docstring)."""

    def confirmed_by(self, reading: CursorReading) -> bool:
        if self.position is None:
            return False
        return (reading.covers_through(self.position) if self.cumulative
                else reading.covers(self.position))

    def refused(self, error: str) -> None:
        """The client refused the ack: it may or may not have been sent."""
        self.process.complete("info", error=error, **self.fields)


@dataclass(frozen=True)
class _Watched:
    cluster: str
    admin_urls: tuple[str, ...]
    topic: str


class CursorObserver:
    """Reads the cursors of the watched topics' subscriptions and settles pending acks
    (module docstring). `start()` once the subscriptions exist; `finish()` after the
    drain: a last reading, then every ack still pending completes `info`."""

    def __init__(self, history: HistoryWriter, ids: SequentialIds) -> None:
        self._history = history
        self._ids = ids
        self._lock = threading.Lock()
        self._watched: dict[tuple[str, str], _Watched] = {}
        self._pending: dict[Scope, list[PendingAck]] = {}
        self._idle: list[ClientProcess] = []
        self._finished = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._rounds = 0
        """How many rounds of readings began: which broker the next round asks first."""

    def watch(self, cluster: str, admin_urls: Sequence[str], topic: str) -> None:
        """Read the cursors of `topic`'s subscriptions in `cluster` from now on."""
        with self._lock:
            self._watched[(cluster, topic)] = _Watched(cluster, tuple(admin_urls), topic)

    def unwatch(self, cluster: str, topic: str) -> None:
        """Stop reading there: acks pending there stay pending until `finish()`."""
        with self._lock:
            self._watched.pop((cluster, topic), None)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._poll, name="cursor-observer", daemon=True)
        self._thread.start()

    def invoke_ack(self, value: str, position: str | None, fields: dict[str, Any], *,
                   confirm_at: str | None, cumulative: bool = False) -> PendingAck:
        """Record, on a pooled process, the `ack` invoke of a message delivered at
        `position` (recorded; None leaves it out of the history) and compared with the
        cursor at `confirm_at` (None: only `finish()` settles it). `fields` carries the
        topic, subscription, consumer and cluster; a `cumulative` ack says so in its
        `detail`, on the invoke and the completion."""
        with self._lock:
            process = self._idle.pop() if self._idle else ClientProcess(self._history, self._ids)
        ack_fields = {"value": value, "position": position, **fields,
                      **({"detail": {"cumulative": True}} if cumulative else {})}
        process.invoke("ack", **ack_fields)
        return PendingAck(process, parse_position(confirm_at), ack_fields, cumulative)

    def await_cursor(self, ack: PendingAck) -> None:
        """The client took the ack: it stays pending until a reading covers it."""
        scope = (ack.fields["cluster"], ack.fields["topic"], ack.fields["subscription"])
        with self._lock:
            if not self._finished:
                self._pending.setdefault(scope, []).append(ack)
                return
        ack.process.complete("info", error="unconfirmed", **ack.fields)

    def finish(self) -> None:
        """The last reading (after the drain), then every ack still pending ends `info`.
        Safe to call more than once."""
        self._stop.set()
        if self._thread is not None:
            # A reading in progress: two admin reads per broker tried, each bounded.
            self._thread.join(TIMEOUT * 4 + POLL_S)
            self._thread = None
        with self._lock:
            if self._finished:
                return
        self._read_all()
        with self._lock:
            self._finished = True
            left = [ack for acks in self._pending.values() for ack in acks]
            self._pending.clear()
        for ack in left:
            ack.process.complete("info", error="unconfirmed", **ack.fields)

    def _poll(self) -> None:
        while not self._stop.wait(POLL_S):
            self._read_all()

    def _read_all(self) -> None:
        with self._lock:
            watched = list(self._watched.values())
            turn = self._rounds
            self._rounds += 1
        for place in watched:
            # Only acks invoked before the reading began may be confirmed by it.
            with self._lock:
                waiting = {scope: list(acks) for scope, acks in self._pending.items()
                           if scope[:2] == (place.cluster, place.topic)}
            first = turn % len(place.admin_urls)
            readings = read_cursors(place.admin_urls[first:] + place.admin_urls[:first],
                                    place.topic)
            if readings is None:
                continue
            for subscription, reading in readings.items():
                self._record(place, subscription, reading)
                covered = [ack for ack in waiting.get((place.cluster, place.topic,
                                                       subscription), [])
                           if ack.confirmed_by(reading)]
                self._confirm((place.cluster, place.topic, subscription), covered)

    def _record(self, place: _Watched, subscription: str, reading: CursorReading) -> None:
        mark = reading.mark_delete
        self._history.record(
            "observer", "ok", "cursor", value=subscription, topic=place.topic,
            subscription=subscription, cluster=place.cluster,
            position=None if mark is None else position_text(mark), detail=reading.detail())

    def _confirm(self, scope: Scope, covered: list[PendingAck]) -> None:
        """Complete `covered` `ok`: those still pending (a reading of `finish()` and the
        poller's last one may overlap; each ack completes once)."""
        if not covered:
            return
        wanted = {id(ack) for ack in covered}
        with self._lock:
            pending = self._pending.get(scope, [])
            confirmed = [ack for ack in pending if id(ack) in wanted]
            self._pending[scope] = [ack for ack in pending if id(ack) not in wanted]
        for ack in confirmed:
            ack.process.complete("ok", **{**ack.fields, "detail": {
                **ack.fields.get("detail", {}), **CONFIRMED}})
        with self._lock:
            self._idle.extend(ack.process for ack in confirmed)


def read_cursors(admin_urls: Sequence[str], topic: str) -> dict[str, CursorReading] | None:
    """Each durable subscription's cursor on `topic` whose position is stored (`_stored`):
    `internalStats` for the cursor (mark-delete position, individually deleted ranges),
    `stats` for the backlog and the consumers; None when either read finds no broker that
    answers."""
    stats = first_answer(admin_urls, topic_path(topic) + "/stats", dict)
    internal = first_answer(admin_urls, topic_path(topic) + "/internalStats", dict)
    if stats is None or internal is None:
        return None
    cursors = internal.get("cursors", {})
    return {name: _reading(cursors[name], entry)
            for name, entry in stats.get("subscriptions", {}).items()
            if entry.get("isDurable", True) and name in cursors and _stored(cursors[name])}


STORED_STATE = "Open"
"""Apache Pulsar's managed-cursor state in which each new position is written to the
cursor's ledger as it moves."""


def _stored(cursor: dict[str, Any]) -> bool:
    """Whether the cursor's position is one a new owner of the topic would find. Apache
    Pulsar's `internalStats` show the position its owner holds in memory, with the cursor's
    `state`: outside `Open` (`NoLedger`, `SwitchingLedger`, `Closed`) the owner has no
    ledger to write it to, so what it shows may be acknowledgements that were never stored
    (a broker cut from ZooKeeper cannot create one) and that the next owner delivers again,
    at least once, as Pulsar promises. Such a reading is not taken. A Target that reports
    no `state` (our reference brokers show the stored position) is taken at its word."""
    state = cursor.get("state")
    return state is None or state == STORED_STATE


def _reading(cursor: dict[str, Any], subscription: dict[str, Any]) -> CursorReading:
    """A cursor's facts from `internalStats`, with `stats`' backlog and consumers. The
    unacknowledged count is the consumers' own `unackedMessages` when they report it, else
    the subscription's."""
    consumers = subscription.get("consumers") or []
    per_consumer = [c["unackedMessages"] for c in consumers if "unackedMessages" in c]
    unacked = sum(per_consumer) if per_consumer else int(subscription.get("unackedMessages", 0))
    return CursorReading(
        parse_position(cursor.get("markDeletePosition")),
        tuple(parse_ranges(cursor.get("individuallyDeletedMessages"))),
        int(subscription.get("msgBacklog", cursor.get("msgBacklog", 0))), len(consumers),
        unacked)
