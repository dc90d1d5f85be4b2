"""The `contract` workload: what a Pulsar user relies on of the official `pulsar-client`,
probed one feature at a time on a cluster without faults, and recorded so that the
checkers judge it from the history alone.

Each group of probes has a topic of its own (`<topic>-<run nonce>-<group>`), so no probe
disturbs another and a rerun against the same Target starts afresh. Two kinds of record:

- Where the contract is "every message sent arrives, nothing else, nothing acknowledged
  comes again", ordinary `send`, `subscribe`, `recv` and `ack` operations, the topic
  workload's shape, for `lost`, `unexpected`, `duplicate`, `order` and `forked-position`.
  Acknowledgements are `info` (`unconfirmed`, the client gives no receipt) except those
  the acknowledgement probes make: each waits until the broker's own backlog count of the
  subscription shows it applied, and only then completes `ok`, so that a later delivery
  of that message in the subscription is a `duplicate`. Legitimate redeliveries (negative
  acknowledgements, the acknowledgement timeout, a closed consumer's messages, a seek)
  are of messages never acknowledged `ok`, so they are never counted.
- Where the expectation is particular (a seek rewinds, a reader from the latest message
  sees no older one), a `probe` operation per expectation: `value` the probe's name,
  `detail` its `expected` and `observed` (JSON values), completed `ok` when they agree and
  `fail` when not; the `contract` checker names every probe whose two differ. A probe whose
  group could not run (its setup failed: a producer, a subscribe, a send of its fixture
  messages, an acknowledgement the broker never confirmed) completes `info`, which makes
  the verdict unknown rather than false. The one call a probe tests is observed whatever
  it does: on a cluster without faults a broker that answers it with an error, or never
  within the client's operation timeout (a seek on a broker without SEEK), breaks the
  contract, so that error is the observation (`{"error": "Timeout"}`) and the probe fails.

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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pulsar

from harness.admin_api import AdminError, admin_request
from harness.workloads.base import WorkloadContext
from harness.workloads.loops import drain_fields
from harness.workloads.official_client import (
    PRODUCER_OPTIONS,
    SEND_TIMEOUT_MS,
    Sent,
    acknowledge_unconfirmed,
    close_client,
    close_quietly,
    position_of,
    record_delivery,
    retry_until,
    send_recorded,
    subscribe_recorded,
)
from harness.workloads.settings import SUBSCRIPTION_MODES
from harness.workloads.stats import subscription_backlogs
from history.writer import ClientProcess, SequentialIds

log = logging.getLogger(__name__)

RECEIVER_QUEUE = 10
"""Far fewer than the messages each probe sends: the client must refill it many times."""
QUEUE_MESSAGES = 50
MESSAGES = 20
KEYS = 4
OPERATION_TIMEOUT_S = 5
"""The client's operation timeout: how long a call may go unanswered (a seek on a broker
that ignores SEEK costs this long)."""
SETUP_S = 20.0
"""How long a group's producers and subscribes may take to be accepted."""
POLL_MS = 50
QUIET_S = 1.5
"""A receive loop still short of what it waits for gives up after this long without a
message."""
SETTLE_S = 0.5
"""After a resume or a seek delivered what was expected, how long to watch for more."""
RECEIVE_BOUND_S = 10.0
NACK_DELAY_MS = 200
ACK_TIMEOUT_MS = 10_000
"""The C++ client refuses an acknowledgement timeout under 10 s."""
ACK_TIMEOUT_WAIT_S = 2.5 * ACK_TIMEOUT_MS / 1000
"""The client redelivers within about a timeout and one tick of its tracker."""
CONFIRM_S = 5.0
"""How long an acknowledgement may take to show in the broker's backlog."""
CONFIRM_POLL_S = 0.02
SEEK_GAP_S = 0.05
"""Around the timestamp a seek goes to, so no publish time lies on it."""

class _CouldNotRun(Exception):
    """A group's setup failed: its probes are undecided, not broken."""


@dataclass
class _Member:
    """A consumer or reader whose deliveries are recorded under `fields`."""

    process: ClientProcess
    fields: dict[str, Any]
    receive: Callable[[int], pulsar.Message]
    consumer: pulsar.Consumer | None = None
    got: list[str] = field(default_factory=list)
    """Values in the order they were delivered."""


class _Group:
    """One group of probes: its topic, the clients it closes at its end, and the probes it
    has yet to record."""

    def __init__(self, context: WorkloadContext, ids: SequentialIds, base: str, name: str,
                 probes: tuple[str, ...]) -> None:
        self.name = name
        self.topic = f"{base}-{name}"
        self.pending = list(probes)
        self.closables: list[pulsar.Producer | pulsar.Consumer | pulsar.Reader] = []
        self._process = ClientProcess(context.history, ids)
        self._fields = {"topic": self.topic, "cluster": context.cluster}

    def expect(self, probe: str, expected: Any, observed: Any, **extra: Any) -> None:
        """Record one expectation as judged: `ok` when `observed` equals `expected`."""
        self._process.invoke("probe", value=probe, detail={"expected": expected},
                             **self._fields)
        outcome = "ok" if observed == expected else "fail"
        self._process.complete(outcome, value=probe, **self._fields, detail={
            "expected": expected, "observed": observed, **extra})
        self.pending.remove(probe)

    def undecided(self, error: str, reason: str) -> None:
        """Every probe not yet recorded completes `info`: it could not run."""
        for probe in self.pending:
            self._process.invoke("probe", value=probe, **self._fields)
            self._process.complete("info", value=probe, error=error,
                                   detail={"reason": reason}, **self._fields)
        self.pending.clear()

    def close(self) -> None:
        for closable in reversed(self.closables):
            try:
                closable.close()
            except pulsar.PulsarException:
                pass


class _Countdown:
    """Waits for `count` completions from the client's callback threads."""

    def __init__(self, count: int) -> None:
        self._left = count
        self._lock = threading.Lock()
        self._done = threading.Event()
        if count == 0:
            self._done.set()

    def tick(self) -> None:
        with self._lock:
            self._left -= 1
            if self._left <= 0:
                self._done.set()

    def wait(self, timeout: float) -> bool:
        return self._done.wait(timeout)


class ContractWorkload:
    def __init__(self, context: WorkloadContext) -> None:
        self.context = context
        self._ids = SequentialIds("p")
        self._base = f"{context.topic}-{uuid.uuid4().hex[:8]}"
        self._client: pulsar.Client | None = None
        self._unfinished: list[str] = []
        """Groups that could not finish: their consumers may not have read everything."""

    # --- the run -------------------------------------------------------------------------

    def open(self) -> None:
        """Only the client: every group subscribes on its own topic when it runs."""
        c = self.context
        c.client_log.parent.mkdir(parents=True, exist_ok=True)
        self._client = pulsar.Client(
            c.service_url, operation_timeout_seconds=OPERATION_TIMEOUT_S,
            logger=pulsar.FileLogger(pulsar.LoggerLevel.Info, str(c.client_log)))

    def _groups(self) -> list[tuple[str, tuple[str, ...], Callable[[_Group], None]]]:
        """Every group in the order it runs: its name, its probes and what runs it."""
        queues = [(f"queue-{mode.replace('_', '-')}-{'batched' if batched else 'single'}", (),
                   self._queue_probe(mode, batched))
                  for mode in SUBSCRIPTION_MODES for batched in (False, True)]
        return [*queues,
                ("ack-individual", ("ack-individual-resume",), self._ack_individual),
                ("ack-cumulative", ("ack-cumulative-resume",), self._ack_cumulative),
                ("nack", ("nack-redelivered", "nack-redelivery-count"), self._nack),
                ("closed-consumer", ("closed-consumer-redelivered",), self._closed_consumer),
                ("reader", ("reader-earliest", "reader-message-id", "reader-latest"),
                 self._readers),
                ("seek", ("seek-message-id", "seek-timestamp"), self._seek),
                ("terminate", ("last-message-id", "terminate-last-position",
                               "terminated-refuses-send", "terminated-refuses-producer"),
                 self._terminate)]

    def run(self, deadline: float, stop: threading.Event) -> None:
        """The acknowledgement timeout's group in a thread of its own (it mostly waits),
        every other group in sequence; a group that no longer fits before `deadline`, or
        after `stop`, records its probes `info` (`not-run`)."""
        waiting = threading.Thread(
            target=self._run_group,
            args=("ack-timeout", ("ack-timeout-redelivered",), self._ack_timeout),
            name="contract-ack-timeout", daemon=True)
        waiting.start()
        for name, probes, probe in self._groups():
            if stop.is_set() or time.monotonic() > deadline:
                self._group(name, probes).undecided("not-run", "the run ended before it")
                continue
            self._run_group(name, probes, probe)
        waiting.join(ACK_TIMEOUT_WAIT_S + SETUP_S + RECEIVE_BOUND_S)

    def _group(self, name: str, probes: tuple[str, ...]) -> _Group:
        return _Group(self.context, self._ids, self._base, name, probes)

    def _run_group(self, name: str, probes: tuple[str, ...],
                   probe: Callable[[_Group], None]) -> None:
        group = self._group(name, probes)
        try:
            probe(group)
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
        client, self._client = self._client, None
        close_client(client)

    # --- the groups ----------------------------------------------------------------------

    def _queue_probe(self, mode: str, batched: bool) -> Callable[[_Group], None]:
        """Many more messages than the receiver queue, on one subscription of `mode`
        (two consumers where the mode lets both receive or stand by), batched or not:
        judged by the ordinary checkers alone."""
        def probe(group: _Group) -> None:
            count = 1 if mode == "exclusive" else 2
            members = [self._subscribe(group, f"c{n}", "queue", mode) for n in range(count)]
            values = self._values(group, QUEUE_MESSAGES)
            if batched:
                self._send_batched(group, values, key_based=mode == "key_shared")
            else:
                self._send(group, values)
            self._receive(members, self._acknowledged,
                          lambda: sum(len(m.got) for m in members) >= len(values))
        return probe

    def _ack_individual(self, group: _Group) -> None:
        """Every other message acknowledged individually, each confirmed by the broker;
        a consumer reconnecting to the Shared subscription gets the rest, none of those."""
        first = self._subscribe(group, "c0", "acks", "shared")
        values = self._values(group, MESSAGES)
        self._send(group, values)
        messages = self._collect(first, len(values))
        for n, message in enumerate(messages[::2]):
            self._acknowledge_confirmed(group, first, message, backlog=len(values) - n - 1)
        self._close_consumer(group, first)
        unacknowledged = _in_order(values, [self._value(m) for m in messages[1::2]])
        again = self._subscribe(group, "c1", "acks", "shared")
        self._receive([again], self._acknowledged,
                      lambda: set(unacknowledged) <= set(again.got), settle_s=SETTLE_S)
        group.expect("ack-individual-resume", unacknowledged, _in_order(values, again.got))

    def _ack_cumulative(self, group: _Group) -> None:
        """The first half acknowledged by one cumulative acknowledgement, confirmed; a
        consumer reconnecting to the Exclusive subscription resumes after it."""
        first = self._subscribe(group, "c0", "acks", "exclusive")
        values = self._values(group, MESSAGES)
        self._send(group, values)
        messages = self._collect(first, len(values))
        half = len(values) // 2
        self._acknowledge_confirmed(group, first, messages[half - 1], backlog=half,
                                    cumulative=True)
        self._close_consumer(group, first)
        again = self._subscribe(group, "c1", "acks", "exclusive")
        self._receive([again], self._recorded, lambda: values[-1] in again.got,
                      settle_s=SETTLE_S)
        group.expect("ack-cumulative-resume", values[half:], again.got)

    def _nack(self, group: _Group) -> None:
        """Every other message negatively acknowledged on its first delivery: each must
        come again, with a redelivery count."""
        member = self._subscribe(group, "c0", "nacks", "shared",
                                 negative_ack_redelivery_delay_ms=NACK_DELAY_MS)
        values = self._values(group, MESSAGES)
        nacked = set(values[::2])
        again: dict[str, int] = {}
        acknowledged: set[str] = set()

        def handle(member: _Member, message: pulsar.Message) -> None:
            value = self._recorded(member, message)
            assert member.consumer is not None
            if value in nacked and value not in member.got[:-1]:
                member.consumer.negative_acknowledge(message)
                return
            if value in nacked:
                again[value] = max(again.get(value, 0), message.redelivery_count())
            acknowledge_unconfirmed(member.process, member.consumer, message, value,
                                    member.fields)
            acknowledged.add(value)

        self._send(group, values)
        self._receive([member], handle, lambda: len(acknowledged) == len(values))
        group.expect("nack-redelivered", _in_order(values, nacked), _in_order(values, again))
        group.expect("nack-redelivery-count", _in_order(values, nacked),
                     _in_order(values, [v for v, count in again.items() if count >= 1]))

    def _ack_timeout(self, group: _Group) -> None:
        """Two messages left unacknowledged past the acknowledgement timeout: both come
        again."""
        member = self._subscribe(group, "c0", "timeouts", "shared",
                                 unacked_messages_timeout_ms=ACK_TIMEOUT_MS)
        values = self._values(group, 4)
        withheld = values[:2]
        again: set[str] = set()

        def handle(member: _Member, message: pulsar.Message) -> None:
            value = self._recorded(member, message)
            assert member.consumer is not None
            if value in withheld and value not in member.got[:-1]:
                return  # left unacknowledged: the timeout must bring it back
            if value in withheld:
                again.add(value)
            acknowledge_unconfirmed(member.process, member.consumer, message, value,
                                    member.fields)

        self._send(group, values)
        self._receive([member], handle, lambda: again == set(withheld),
                      quiet_s=ACK_TIMEOUT_WAIT_S, bound_s=ACK_TIMEOUT_WAIT_S)
        group.expect("ack-timeout-redelivered", withheld, _in_order(values, again))

    def _closed_consumer(self, group: _Group) -> None:
        """Of two consumers of a Shared subscription, one takes five messages and closes
        without acknowledging them: the other gets them, and everything else."""
        leaving = self._subscribe(group, "c0", "shared", "shared")
        staying = self._subscribe(group, "c1", "shared", "shared")
        values = self._values(group, 30)
        self._send(group, values)
        held = _in_order(values, [self._value(m) for m in self._collect(leaving, 5)])
        self._close_consumer(group, leaving)
        self._receive([staying], self._acknowledged, lambda: set(values) <= set(staying.got))
        group.expect("closed-consumer-redelivered", held,
                     _in_order(values, set(held) & set(staying.got)))

    def _readers(self, group: _Group) -> None:
        """Readers from the earliest message, from a message id (exclusive, the client's
        default) and from the latest message (only what is sent after it starts)."""
        values = self._values(group, 10)
        ids = self._send(group, values)
        for probe, start, expected in (("reader-earliest", pulsar.MessageId.earliest, values),
                                       ("reader-message-id", ids[4], values[5:])):
            group.expect(probe, expected, self._read(group, probe, start, expected[-1]))
        later = [f"{group.name}-{n}" for n in range(len(values), len(values) + 3)]
        reader = self._reader(group, "reader-latest", pulsar.MessageId.latest)
        if isinstance(reader, _Member):
            self._send(group, later)
            self._receive([reader], self._recorded, lambda: later[-1] in reader.got,
                          settle_s=SETTLE_S)
        group.expect("reader-latest", later,
                     reader.got if isinstance(reader, _Member) else reader)

    def _seek(self, group: _Group) -> None:
        """A consumer that read everything seeks back to a message id, then to a time:
        what follows the id (Pulsar's clients differ on whether the sought message itself
        comes again, so either is accepted), and what was published after the time."""
        member = self._subscribe(group, "c0", "seek", "exclusive")
        values = self._values(group, 10)
        ids = self._send(group, values[:5])
        time.sleep(SEEK_GAP_S)
        since_ms = int(time.time() * 1000)
        time.sleep(SEEK_GAP_S)
        ids += self._send(group, values[5:])
        self._collect(member, len(values))
        for probe, to, sought, expected in (
                ("seek-message-id", ids[3], values[3], values[4:]),
                ("seek-timestamp", since_ms, None, values[5:])):
            observed = self._after_seek(member, to, values[-1])
            if isinstance(observed, list) and sought is not None and observed[:1] == [sought]:
                observed = observed[1:]
            group.expect(probe, expected, observed)

    def _terminate(self, group: _Group) -> None:
        """The last message id before termination; termination's answer; after it, sends
        and new producers refused, while the subscription still gets every message."""
        member = self._subscribe(group, "c0", "terminated", "exclusive")
        values = self._values(group, 5)
        ids = self._send(group, values)
        last = position_of(ids[-1])
        consumer = member.consumer
        assert consumer is not None
        group.expect("last-message-id", last,
                     _observed(lambda: position_of(consumer.get_last_message_id())))
        group.expect("terminate-last-position", last, self._terminate_topic(group.topic))
        refused = self._send_once(group, f"{group.name}-{len(values)}")
        group.expect("terminated-refuses-send", {"error": "TopicTerminated"},
                     {"error": refused.error} if refused.error else
                     {"accepted": position_of(refused.message_id)})
        group.expect("terminated-refuses-producer", {"error": "TopicTerminated"},
                     _observed(lambda: self._accepted_producer(group)))
        self._receive([member], self._acknowledged, lambda: values[-1] in member.got)

    # --- clients, recorded ---------------------------------------------------------------

    def _connected(self) -> pulsar.Client:
        assert self._client is not None, "open() first"
        return self._client

    def _values(self, group: _Group, count: int) -> list[str]:
        """Message ids unique in the run: the group's name and a number."""
        return [f"{group.name}-{n}" for n in range(count)]

    @staticmethod
    def _value(message: pulsar.Message) -> str:
        value: str = message.data().decode(errors="replace")
        return value

    def _subscribe(self, group: _Group, name: str, subscription: str, mode: str,
                   **options: Any) -> _Member:
        """A consumer with a small receiver queue, its subscribe recorded."""
        c = self.context
        process = ClientProcess(c.history, self._ids)
        consumer = subscribe_recorded(
            process, self._connected(), group.topic, subscription, mode,
            time.monotonic() + SETUP_S, replicated=False,
            fields={"consumer": name, "cluster": c.cluster},
            options={"receiver_queue_size": RECEIVER_QUEUE, **options})
        group.closables.append(consumer)
        fields = {"topic": group.topic, "subscription": subscription, "consumer": name,
                  "cluster": c.cluster}
        return _Member(process, fields, consumer.receive, consumer)

    def _reader(self, group: _Group, probe: str, start: Any) -> _Member | dict[str, str]:
        """A reader from `start`, its deliveries recorded under the probe's name as
        subscription and consumer (a reader's own subscription is the client's secret);
        the error, as an observation, when the client could not make it."""
        try:
            reader = self._connected().create_reader(group.topic, start,
                                                     receiver_queue_size=RECEIVER_QUEUE)
        except pulsar.PulsarException as exc:
            return {"error": type(exc).__name__}
        group.closables.append(reader)
        fields = {"topic": group.topic, "subscription": probe, "consumer": probe,
                  "cluster": self.context.cluster}
        return _Member(ClientProcess(self.context.history, self._ids), fields,
                       reader.read_next)

    def _read(self, group: _Group, probe: str, start: Any,
              last: str) -> list[str] | dict[str, str]:
        """What a reader from `start` delivers, until `last` or quiet."""
        reader = self._reader(group, probe, start)
        if not isinstance(reader, _Member):
            return reader
        self._receive([reader], self._recorded, lambda: last in reader.got, settle_s=SETTLE_S)
        return reader.got

    def _after_seek(self, member: _Member, to: Any, last: str) -> list[str] | dict[str, str]:
        """What the consumer gets after seeking to `to`, until `last` comes again."""
        assert member.consumer is not None
        start = len(member.got)
        try:
            member.consumer.seek(to)
        except pulsar.PulsarException as exc:
            return {"error": type(exc).__name__}
        self._receive([member], self._recorded, lambda: last in member.got[start:],
                      settle_s=SETTLE_S)
        return member.got[start:]

    def _producer(self, topic: str, **options: Any) -> pulsar.Producer:
        return self._connected().create_producer(topic, **{**PRODUCER_OPTIONS, **options})

    def _accepted_producer(self, group: _Group) -> dict[str, bool]:
        """A producer the cluster accepted (closed with the group)."""
        group.closables.append(self._producer(group.topic))
        return {"accepted": True}

    def _send(self, group: _Group, values: Sequence[str]) -> list[Any]:
        """Each value sent on its own, keyed, recorded; the ids the broker gave them."""
        producer = retry_until(lambda: self._producer(group.topic), time.monotonic() + SETUP_S,
                               f"create a producer on {group.topic}")
        group.closables.append(producer)
        process = ClientProcess(self.context.history, self._ids)
        ids = []
        for n, value in enumerate(values):
            sent = send_recorded(process, producer, value, self._send_fields(group, n))
            if sent.message_id is None:
                raise _CouldNotRun(f"the send of {value} failed: {sent.error}")
            ids.append(sent.message_id)
        return ids

    def _send_once(self, group: _Group, value: str) -> Sent:
        """One more send on the group's last producer, whatever comes of it."""
        producer = next(p for p in reversed(group.closables) if isinstance(p, pulsar.Producer))
        return send_recorded(ClientProcess(self.context.history, self._ids), producer, value,
                             self._send_fields(group, 0))

    def _send_fields(self, group: _Group, n: int) -> dict[str, Any]:
        return {"key": f"k{n % KEYS}", "topic": group.topic, "cluster": self.context.cluster}

    def _send_batched(self, group: _Group, values: Sequence[str], *, key_based: bool) -> None:
        """Every value sent asynchronously, so the client batches them; each send under a
        process of its own, as a batch holds many sends outstanding at once (Key_Shared
        needs batches of one key, so there the batching is by key)."""
        producer = retry_until(
            lambda: self._producer(
                group.topic, batching_enabled=True, batching_max_messages=RECEIVER_QUEUE,
                batching_max_publish_delay_ms=20, max_pending_messages=len(values),
                batching_type=(pulsar.BatchingType.KeyBased if key_based
                               else pulsar.BatchingType.Default)),
            time.monotonic() + SETUP_S, f"create a batching producer on {group.topic}")
        group.closables.append(producer)
        done = _Countdown(len(values))
        for n, value in enumerate(values):
            process = ClientProcess(self.context.history, self._ids)
            fields = self._send_fields(group, n)
            process.invoke("send", value=value, **fields)

            def sent(result: pulsar.Result, message_id: Any, process: ClientProcess = process,
                     value: str = value, fields: dict[str, Any] = fields) -> None:
                if result == pulsar.Result.Ok:
                    process.complete("ok", value=value, position=position_of(message_id),
                                     **fields)
                else:
                    process.complete("info", value=value, error=result.name, **fields)
                done.tick()

            producer.send_async(value.encode(), sent, partition_key=fields["key"])
        producer.flush()
        if not done.wait(SEND_TIMEOUT_MS / 1000):
            raise _CouldNotRun("a batched send never completed")

    def _receive(self, members: Sequence[_Member],
                 handle: Callable[[_Member, pulsar.Message], object],
                 done: Callable[[], bool], *, settle_s: float = 0.0,
                 quiet_s: float = QUIET_S, bound_s: float = RECEIVE_BOUND_S) -> None:
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

    def _recorded(self, member: _Member, message: pulsar.Message) -> str:
        """Record a delivery, acknowledging nothing."""
        value = record_delivery(member.process, message, member.fields)
        member.got.append(value)
        return value

    def _acknowledged(self, member: _Member, message: pulsar.Message) -> None:
        """Record a delivery and acknowledge it (`info`: unconfirmed)."""
        value = self._recorded(member, message)
        assert member.consumer is not None
        acknowledge_unconfirmed(member.process, member.consumer, message, value,
                                member.fields)

    def _collect(self, member: _Member, count: int) -> list[pulsar.Message]:
        """`count` deliveries, recorded and not acknowledged; fewer is a setup failure."""
        messages: list[pulsar.Message] = []

        def keep(member: _Member, message: pulsar.Message) -> None:
            self._recorded(member, message)
            messages.append(message)

        self._receive([member], keep, lambda: len(messages) >= count)
        if len(messages) < count:
            raise _CouldNotRun(f"{member.fields['consumer']} received {len(messages)} of "
                               f"{count} messages")
        return messages

    @staticmethod
    def _close_consumer(group: _Group, member: _Member) -> None:
        """Close a consumer before its group ends (the client refuses a second close)."""
        assert member.consumer is not None
        group.closables.remove(member.consumer)
        close_quietly(member.consumer)

    def _acknowledge_confirmed(self, group: _Group, member: _Member, message: pulsar.Message,
                               *, backlog: int, cumulative: bool = False) -> None:
        """An `ack` completed `ok` only once the broker counts at most `backlog` messages
        left in the subscription: it applied the acknowledgement. Not confirmed within
        `CONFIRM_S`, the `ack` is `info` and the group cannot judge what follows."""
        assert member.consumer is not None
        value = self._value(message)
        fields = member.fields
        detail = {"cumulative": True} if cumulative else None
        member.process.invoke("ack", value=value, detail=detail, **fields)
        try:
            if cumulative:
                member.consumer.acknowledge_cumulative(message)
            else:
                member.consumer.acknowledge(message)
        except pulsar.PulsarException as exc:
            member.process.complete("info", value=value, error=type(exc).__name__, **fields)
            raise
        deadline = time.monotonic() + CONFIRM_S
        while time.monotonic() < deadline:
            left = (subscription_backlogs(self.context.admin_urls, group.topic) or {}).get(
                fields["subscription"])
            if left is not None and left <= backlog:
                member.process.complete("ok", value=value, detail=detail, **fields)
                return
            time.sleep(CONFIRM_POLL_S)
        member.process.complete("info", value=value, error="unconfirmed", **fields)
        raise _CouldNotRun(f"the broker never counted the acknowledgement of {value}")

    def _terminate_topic(self, topic: str) -> str | dict[str, str]:
        """Terminate through the admin API; the last position it answers. A broker that
        does not own the topic redirects, which `admin_request` cannot follow for a POST,
        so each broker is asked in turn until the owner answers."""
        path = "/admin/v2/" + topic.replace("://", "/") + "/terminate"
        for url in self.context.admin_urls:
            try:
                answer = admin_request(url, "POST", path)
            except AdminError as exc:
                if exc.status == 307:
                    continue
                return {"error": f"HTTP {exc.status}"}
            if isinstance(answer, dict) and "ledgerId" in answer and "entryId" in answer:
                return f"{answer['ledgerId']}:{answer['entryId']}"
            return {"answer": repr(answer)}
        raise _CouldNotRun(f"no broker would terminate {topic}")


def _in_order(values: Sequence[str], chosen: Iterable[str]) -> list[str]:
    """`chosen` in the order `values` were sent (anything else last), repeats kept: a
    comparison that does not depend on the order the broker chose to deliver in."""
    order = {value: n for n, value in enumerate(values)}
    return sorted(chosen, key=lambda value: order.get(value, len(order)))


def _observed(call: Callable[[], Any]) -> Any:
    """The call's result, or the client's error as the observation."""
    try:
        return call()
    except pulsar.PulsarException as exc:
        return {"error": type(exc).__name__}
