"""The `topic` workload: keyed producers and one subscription's consumers on one persistent
topic, with the official `pulsar-client`.

Producers send one message at a time (no batching, so every message has its own entry and
position), which keeps each client process to one outstanding operation as the history
contract asks. A send is `ok` with the position the broker assigned, `fail` only when the
client refused it before anything reached a broker, and `info` otherwise (a timeout, a
dropped connection): then it may or may not be written, and the worker goes on under a
new process id.

Two subscriptions are made before the first send. The live one (`live`, in the scenario's
mode) has the scenario's consumers reading throughout. The late one (`late`) is read only
in the final drain, by one exclusive consumer: its messages come from storage after every
fault and heal, so it proves that every acknowledged message is still stored, which the
live consumers, fed mostly from the broker's memory moments after each write, cannot.

Consumers record every delivered message as a `recv` and then acknowledge it. The official
Python client gives no receipt for an acknowledgement, so each `ack` stays pending until
a reading of the subscription's cursor covers the message (`harness.workloads.cursors`,
which records each reading as a `cursor` observation): then it completes `ok`, and
`duplicate` judges every later delivery of it. What no reading covered by the end of the
drain completes `info`.

With `crash_interval_s`, a live consumer crashes at seeded moments of the load: it takes a
few messages, recorded as `recv`s, without acknowledging them, and is closed; a new
consumer (`c0.1` for `c0`, under a new process id, its `subscribe` naming the one it
`replaces` in `detail`) takes its place. The broker owes those messages to the
subscription again: they must come to some consumer, or the backlog never drains.

Three more knobs shape the consumers. With `process_ms` a consumer works that long on
each message between its `recv` and its `ack`, so above the time between messages the
consumers lag; `receiver_queue` is how many messages the broker may push to a consumer
ahead of what it has read, so a lagging subscription's backlog beyond it waits at the
broker and is read from storage later. With `nack_share` a consumer negatively
acknowledges that share of its deliveries (drawn from a seeded stream of its own): the
`recv` has no `ack`, and the client asks the broker for the message again after
`NACK_DELAY_MS`, which must deliver it again to some consumer of the subscription (only
in the `NACK_MODES`, which say why). With `cumulative_ack_every` N a consumer acknowledges
cumulatively, as an application that commits its progress in batches does: every Nth
message it receives, and the last one it holds whenever a receive poll finds nothing
more, each `ack` naming the message that covers all before it (only in the
`CUMULATIVE_MODES`, where one consumer reads at a time). The four apply to the live
subscription's consumers; the late one reads as fast as it can and acknowledges every
message on its own.

With `deduplication` the topic's `deduplicationEnabled` policy is switched on before the
first producer connects, and the run's `meta` says so: the broker must then store a
message its producer sent again (after a reconnect, under the same producer name and
sequence id) once, and `multi-position` counts a value at two positions.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pulsar

from harness.credentials import client_authentication
from harness.workloads.base import WorkloadContext, WorkloadOpenFailed
from harness.workloads.client_log import client_logger
from harness.workloads.cursors import CursorObserver
from harness.workloads.knobs import knob
from harness.workloads.loops import (
    DeliveryClock,
    drain_fields,
    run_workers,
    seeded_moments,
    wait_until_drained,
)
from harness.workloads.official_client import (
    LIVE,
    OPEN_TIMEOUT,
    RECEIVE_POLL_MS,
    acknowledge_recorded,
    close_client,
    close_quietly,
    next_message,
    produce,
    producer_options,
    record_delivery,
    retry_until,
    subscribe_recorded,
)
from harness.workloads.settings import SINGLE_ACTIVE_MODES
from harness.workloads.shared_knobs import (
    ConsumerWorkKnobs,
    DeduplicationKnobs,
    OfficialClientKnobs,
)
from harness.workloads.stats import deduplicate, subscription_backlogs
from history.writer import ClientProcess, SequentialIds

LATE = "late"
CRASH_TAKES = 5
"""At most this many messages a crashing consumer takes without acknowledging them..."""
CRASH_POLLS = 10
"""...in at most this many receive polls."""
NACK_DELAY_MS = 500
"""How long the client waits before asking again for a negatively acknowledged message
(the client's own default, a minute, would leave it out of most runs)."""
NACK_MODES = ("shared", "key_shared")
"""The subscription modes `nack_share` is taken in. In the others the client asks for
every unacknowledged message again, not the one negatively acknowledged, and that races
with its own acknowledgements on their way: a message the broker sends again just before
its acknowledgement arrives is delivered after an acknowledgement the cursor confirms,
which a history cannot tell from a redelivery of an acknowledged message."""
CUMULATIVE_MODES = SINGLE_ACTIVE_MODES
"""The subscription modes `cumulative_ack_every` is taken in: Pulsar refuses a cumulative
acknowledgement on a Shared or Key_Shared subscription, whose consumers each hold some of
the messages before the one acknowledged."""
DEDUPLICATION_APPLIED_S = 30.0
"""How long the topic's owner may take to put the deduplication policy in force."""


@dataclass(frozen=True)
class _Consumer:
    process: ClientProcess
    name: str
    subscription: str
    consumer: pulsar.Consumer
    stopped: threading.Event = field(default_factory=threading.Event)
    """Set when this consumer alone stops reading: it is about to crash."""

    def successor_name(self) -> str:
        """The name of the consumer that takes its place after a crash: `c0.1`, `c0.2`..."""
        base, _, crashes = self.name.partition(".")
        return f"{base}.{int(crashes or 0) + 1}"


class TopicWorkload:
    @dataclass(frozen=True)
    class Knobs(OfficialClientKnobs, ConsumerWorkKnobs, DeduplicationKnobs):
        crash_interval_s: float = knob(0.0, "Mean time between consumer crashes while the "
                                            "load runs (0: none).", least=0)
        """A crashing consumer takes a few messages without acknowledging them and closes; a
        new consumer takes its place. The broker owes those messages to the subscription
        again, which no other loop exercises: every other consumer acknowledges all it
        receives."""
        receiver_queue: int = knob(100, "How many messages the broker may push to a consumer "
                                        "ahead of what it has read.", least=1)
        """With lagging consumers the rest of the backlog waits at the broker, to be read from
        storage, and a crash takes back up to this many messages at once."""
        nack_share: float = knob(0.0, "The share of deliveries a consumer negatively "
                                      "acknowledges instead of acknowledging.", least=0, most=1)
        """Seeded per consumer; the client asks the broker for them again after
        `NACK_DELAY_MS`. Recorded as a `recv` with no `ack`."""
        cumulative_ack_every: int = knob(0, "A consumer acknowledges cumulatively every this "
                                            "many messages, and when idle (0: each message "
                                            "on its own).", least=0)
        """The messages between two cumulative acks have no `ack` of their own: the
        checkers count each acknowledged from the cumulative ack that covers it."""

        def problem(self, common: Mapping[str, Any]) -> tuple[str, str] | None:
            if self.nack_share and self.subscription_mode not in NACK_MODES:
                return "nack_share", (
                    f"only with subscription_mode {' or '.join(NACK_MODES)} (in the others a "
                    f"negative acknowledgement asks for every unacknowledged message again), "
                    f"got {self.subscription_mode}")
            if self.cumulative_ack_every and self.subscription_mode not in CUMULATIVE_MODES:
                return "cumulative_ack_every", (
                    f"only with subscription_mode {' or '.join(CUMULATIVE_MODES)} (Pulsar "
                    f"refuses cumulative acknowledgements on the others), "
                    f"got {self.subscription_mode}")
            return super().problem(common)

    def __init__(self, context: WorkloadContext) -> None:
        self.context = context
        self.knobs = context.settings.knobs_as(TopicWorkload.Knobs)
        self._ids = SequentialIds("p")
        self._client: pulsar.Client | None = None
        self._live: list[_Consumer] = []
        """The live subscription's consumers now: a crashed one's successor takes its slot."""
        self._producers: list[pulsar.Producer] = []
        self._consuming = threading.Event()
        self._consumer_threads: dict[str, threading.Thread] = {}
        self._threads_lock = threading.Lock()
        """Starting a consumer's thread and `close()` taking the threads to join."""
        self._crashes: threading.Thread | None = None
        self._crashes_end = 0.0
        """When the crash thread is over at the latest (a `time.monotonic()`)."""
        self._reader_join_s = RECEIVE_POLL_MS / 1000 * 5 + self.knobs.process_ms / 1000 + 1
        """How long a consumer's thread may take to stop once told to: its receive poll, the
        work on what it just received, and that message's acknowledgement."""
        self._deliveries = DeliveryClock()
        self._cursors = CursorObserver(context.history, self._ids)
        self._cursors.watch(context.cluster, context.admin_urls, context.topic)

    # --- open ----------------------------------------------------------------------------

    @property
    def topic(self) -> str:
        return self.context.topic

    def open(self) -> None:
        c = self.context
        self._client = pulsar.Client(
            c.service_url, operation_timeout_seconds=10,
            authentication=client_authentication(),
            logger=client_logger(c.client_log))
        deadline = time.monotonic() + OPEN_TIMEOUT
        self._live = [self._subscribe(f"c{n}", LIVE, self.knobs.subscription_mode, deadline)
                      for n in range(c.settings.consumers)]
        # The late subscription exists from now on; its consumer comes back in the drain.
        self._subscribe("late", LATE, "exclusive", deadline).consumer.close()
        if self.knobs.deduplication:
            refused = deduplicate(c.admin_urls, c.topic, DEDUPLICATION_APPLIED_S)
            if refused is not None:
                raise WorkloadOpenFailed(refused)
        self._producers = [retry_until(self._new_producer, deadline,
                                       f"create a producer on {c.topic}")
                           for _ in range(c.settings.producers)]
        self._cursors.start()
        for consumer in self._live:
            self._start_consuming(consumer)

    def _subscribe(self, name: str, subscription: str, mode: str, deadline: float,
                   replaces: str | None = None) -> _Consumer:
        """Subscribe, recording each attempt: the subscription exists from the first `ok`.
        `replaces` names the crashed consumer this one succeeds."""
        c = self.context
        process = ClientProcess(c.history, self._ids)
        successor = {"detail": {"mode": mode, "replaces": replaces}} if replaces else {}
        consumer = subscribe_recorded(process, self._connected(), c.topic, subscription, mode,
                                      deadline, replicated=False,
                                      fields={"consumer": name, "cluster": c.cluster,
                                              **successor},
                                      options={
                                          "receiver_queue_size": self.knobs.receiver_queue,
                                          "negative_ack_redelivery_delay_ms": NACK_DELAY_MS})
        return _Consumer(process, name, subscription, consumer)

    def _new_producer(self) -> pulsar.Producer:
        return self._connected().create_producer(self.context.topic,
                                                 **producer_options(self.knobs))

    def _connected(self) -> pulsar.Client:
        assert self._client is not None, "open() first"
        return self._client

    # --- load ----------------------------------------------------------------------------

    def run(self, deadline: float, stop: threading.Event) -> None:
        c = self.context
        workers = len(self._producers)
        grace_s = self.knobs.send_timeout_s + 5
        if self.knobs.crash_interval_s:
            self._crashes_end = (deadline + grace_s + self._reader_join_s
                                 + CRASH_POLLS * RECEIVE_POLL_MS / 1000)
            self._crashes = threading.Thread(target=self._crash_consumers,
                                             args=(deadline, stop, grace_s),
                                             name="consumer-crashes", daemon=True)
            self._crashes.start()
        run_workers(lambda n: produce(
            c, self._ids, n, workers, self._producers[n], self._new_producer,
            lambda key: {"key": key, "topic": c.topic, "cluster": c.cluster}, deadline, stop),
            workers, "producer", deadline, grace_s)
        self._join_crashes()

    # --- crashes -------------------------------------------------------------------------

    def _crash_consumers(self, deadline: float, stop: threading.Event, grace_s: float) -> None:
        """At seeded moments around every `crash_interval_s`, a seeded live consumer
        crashes and a successor takes its place (module docstring); a successor that
        cannot subscribe by `grace_s` after the deadline ends the crashes."""
        c = self.context
        rng = random.Random(f"{c.seed}:crash")
        for _ in seeded_moments(rng, self.knobs.crash_interval_s, deadline, stop):
            slot = rng.randrange(len(self._live))
            self._crash(self._live[slot], rng.randint(1, CRASH_TAKES), stop)
            try:
                successor = self._succeed(self._live[slot], deadline + grace_s)
            except WorkloadOpenFailed:
                return
            self._live[slot] = successor
            self._start_consuming(successor)

    def _crash(self, victim: _Consumer, takes: int, stop: threading.Event) -> None:
        """`victim` stops reading, receives up to `takes` messages without acknowledging
        them, and is closed with them still out at it."""
        victim.stopped.set()
        self._consumer_threads[victim.name].join(self._reader_join_s)
        fields = self._delivery_fields(victim)
        taken = 0
        for _ in range(CRASH_POLLS):
            message = next_message(victim.consumer, stop)
            if message is None:
                continue
            self._deliveries.tick()
            record_delivery(victim.process, message, fields)
            taken += 1
            if taken == takes:
                break
        close_quietly(victim.consumer)

    def _succeed(self, victim: _Consumer, deadline: float) -> _Consumer:
        """A new consumer, under a new process, in the crashed `victim`'s place."""
        return self._subscribe(victim.successor_name(), LIVE,
                               self.knobs.subscription_mode, deadline,
                               replaces=victim.name)

    def _join_crashes(self) -> None:
        """Wait for the crash thread: its last successor's subscribe gives up about
        `grace_s` after the deadline."""
        if self._crashes is not None:
            self._crashes.join(max(0.0, self._crashes_end - time.monotonic()))

    # --- consuming -----------------------------------------------------------------------

    def _start_consuming(self, consumer: _Consumer) -> None:
        """Read with `consumer` in a thread of its own, unless `close()` began: then no
        thread starts that it would not join."""
        with self._threads_lock:
            if self._consuming.is_set():
                close_quietly(consumer.consumer)
                return
            thread = threading.Thread(target=self._consume, args=(consumer,),
                                      name=f"consumer-{consumer.name}", daemon=True)
            thread.start()
            self._consumer_threads[consumer.name] = thread

    def _consume(self, reader: _Consumer) -> None:
        """Receive, record, and acknowledge, until `close()` or its crash. A live consumer
        works on each message for `process_ms` first, negatively acknowledges a seeded
        `nack_share` of them instead, and with `cumulative_ack_every` acknowledges in
        batches (module docstring); the late consumer only proves what is stored."""
        live = reader.subscription == LIVE
        hold_s = self.knobs.process_ms / 1000 if live else 0.0
        nack_share = self.knobs.nack_share if live else 0.0
        every = self.knobs.cumulative_ack_every if live else 0
        fields = self._delivery_fields(reader)
        nacks = random.Random(f"{self.context.seed}:nack:{reader.name}")
        held: list[tuple[pulsar.Message, str]] = []  # no cumulative ack covers them yet
        while not (self._consuming.is_set() or reader.stopped.is_set()):
            message = next_message(reader.consumer, self._consuming)
            if message is None:
                if held:  # idle: commit what was taken
                    self._ack_cumulative(reader, held, fields)
                continue
            self._deliveries.tick()
            value = record_delivery(reader.process, message, fields)
            if hold_s:
                self._consuming.wait(hold_s)
            if nack_share and nacks.random() < nack_share:
                try:
                    reader.consumer.negative_acknowledge(message)
                except pulsar.PulsarException:
                    pass  # closed under it: the subscription owes the message all the same
            elif every:
                held.append((message, value))
                if len(held) >= every:
                    self._ack_cumulative(reader, held, fields)
            else:
                acknowledge_recorded(reader.consumer, message, value, fields, self._cursors)

    def _ack_cumulative(self, reader: _Consumer, held: list[tuple[pulsar.Message, str]],
                        fields: dict[str, str]) -> None:
        """Acknowledge cumulatively the newest of `held`, which covers the others, and
        forget them."""
        message, value = held[-1]
        held.clear()
        acknowledge_recorded(reader.consumer, message, value, fields, self._cursors,
                             cumulative=True)

    def _delivery_fields(self, reader: _Consumer) -> dict[str, str]:
        """The fields of `reader`'s `recv`s and `ack`s."""
        c = self.context
        return {"topic": c.topic, "subscription": reader.subscription,
                "consumer": reader.name, "cluster": c.cluster}

    # --- drain and close -----------------------------------------------------------------

    def drain(self) -> bool:
        """Bring the late subscription's consumer back, then complete once no consumer
        has received anything for `drain_quiet_s` and the broker reports no backlog on
        either subscription; `info` after `drain_timeout_s`."""
        c = self.context
        fields = drain_fields(c)
        c.history.record("harness", "invoke", "drain", **fields)
        started = time.monotonic()
        try:
            self._start_consuming(self._subscribe("late", LATE, "exclusive",
                                                  started + c.settings.drain_timeout_s))
        except WorkloadOpenFailed as exc:
            c.history.record("harness", "info", "drain", error="late-subscribe-failed",
                             detail={"message": str(exc)}, **fields)
            self._cursors.finish()
            return False
        drained = wait_until_drained(c, started, self._deliveries,
                                     lambda: subscription_backlogs(c.admin_urls, c.topic))
        self._cursors.finish()  # the last reading, after the drain
        return drained

    def close(self) -> None:
        self._cursors.finish()
        self._join_crashes()  # over already when run() returned
        with self._threads_lock:
            self._consuming.set()
            threads = list(self._consumer_threads.values())
        for thread in threads:
            thread.join(self._reader_join_s)
        client, self._client = self._client, None
        close_client(client)
