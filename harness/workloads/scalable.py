"""The `scalable` workload: keyed producers, a stream and a queue subscription on one
PIP-468 scalable topic, while an admin driver splits and merges its segments.

It drives the harness's scalable-topics client (harness/scalable_client, asyncio, on one
loop of its own thread):

- **Producers** (`workload.producers` threads, paced to `workload.rate` together) each own a
  routing `ScalableProducer`; a `send` is `ok` with the `segment` it was stored in, its
  `position` and the layout `epoch` the producer knew then. Any error leaves the outcome
  unknown (`info`: the client repeats a send whose connection broke, so it may be stored),
  and the worker goes on under a new process id. A share of the sends (`edge_key_share`)
  carry keys that hash onto the first or last hash of an active segment
  (harness/workloads/edge_keys.py), where routing off-by-ones live. Producer n acts on a
  new layout n * `layout_lag_ms` after it arrives: a producer late to learn of a split.
- **Subscriptions** `stream` (ordered: `StreamConsumer`s registered with the controller)
  and `queue` (`QueueConsumer`s, Shared on every segment) are created through the admin
  API before the first send, each a `subscribe` with its mode. `workload.consumers`
  consumers read each. Every delivery is a `recv` (segment, position, redelivery count,
  consumer), then an `ack` of that position that completes `ok` when the broker's
  ACK_RESPONSE came back without an error, and `info` when the broker refused it or the
  subscription went away first.
- **Layout** (harness/workloads/scalable_layout.py): the admin driver's `split`/`merge`,
  the observer's `layout` per epoch.
- **Cursors** (harness/workloads/segment_cursors.py): a `cursor` reading of each
  subscription over its segments about every 0.75 s from the start of the load to the end
  of the drain, from the topic's PIP-468 stats: what `stalled-subscription` judges.
- **Drain**: consumers keep reading after the final heal until none received anything for
  `drain_quiet_s` and no segment has a backlog in any subscription. With
  `late_subscription`, a third subscription, `late`, made with the others, gets its one
  `QueueConsumer` only now: it reads the topic as the stored layout describes it after
  the load, which the live consumers, following every pushed epoch, never test.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
import threading
import time
from typing import Any

from harness.credentials import client_token
from harness.scalable_client.producer import ScalableProducer, SendResult
from harness.scalable_client.queue_consumer import QueueConsumer
from harness.scalable_client.segment_consumer import AckListener, Message
from harness.scalable_client.session_events import Assignment
from harness.scalable_client.stream_consumer import StreamConsumer
from harness.workloads.base import WorkloadContext, WorkloadOpenFailed
from harness.workloads.client_loop import ClientLoop
from harness.workloads.edge_keys import EdgeKeys
from harness.workloads.knobs import knob
from harness.workloads.loops import (
    DeliveryClock,
    drain_fields,
    paced_slots,
    run_workers,
    wait_until_drained,
)
from harness.workloads.plan import message_plan
from harness.workloads.scalable_admin import TIMEOUT as ADMIN_TIMEOUT
from harness.workloads.scalable_admin import AdminRefused, AdminUnreachable, ScalableTopicAdmin
from harness.workloads.scalable_layout import LayoutDriver, LayoutObserver
from harness.workloads.segment_cursors import SegmentCursorObserver
from harness.workloads.shared_knobs import ConsumerWorkKnobs, SendKnobs
from history.writer import ClientProcess, SequentialIds

log = logging.getLogger(__name__)

SUBSCRIPTIONS: dict[str, type[StreamConsumer] | type[QueueConsumer]] = {
    "stream": StreamConsumer, "queue": QueueConsumer}
"""Subscription name (also its mode in the history) -> the client that reads it."""
LATE = "late"
"""The subscription `late_subscription` adds, read by a `QueueConsumer` (mode `queue`)."""
CLIENT_TIMEOUT_S = 60.0
"""How long a client keeps retrying through broker failures (registration, lookups)."""
OPEN_TIMEOUT_S = 60.0
RETRY_S = 0.5
CLIENT_LOGGERS = ("harness.scalable_client", "wire.connection")
"""The client library's loggers: the scalable-topics client and the connections under it."""


def scalable_topic_name(topic: str) -> str:
    """The run's topic under the scalable domain: `persistent://t/ns/x` -> `topic://t/ns/x`."""
    return "topic://" + topic.partition("://")[2]


def service_urls(service_url: str) -> list[str]:
    """`pulsar://a:1,b:2` -> [`pulsar://a:1`, `pulsar://b:2`]."""
    return ["pulsar://" + host for host in service_url.removeprefix("pulsar://").split(",")]


def rotated(urls: list[str], n: int) -> list[str]:
    """`urls` starting at the n-th, so that clients spread their sessions over the brokers."""
    n %= len(urls)
    return urls[n:] + urls[:n]


def segment_of(segment_topic: str) -> int:
    """The segment id at the end of a segment topic's descriptor (`.../0000-7fff-1`)."""
    return int(segment_topic.rsplit("-", 1)[1])


class _Deliveries:
    """A consumer's handler: records each delivery as a `recv` and its acknowledgement as
    an `ack`. A consumer reads its segments side by side, one message at a time each, so
    every acknowledgement in flight has a process of its own; a process whose `ack` has
    completed serves the next delivery. Each message is held `process_ms` between its
    `recv` and its `ack`: the segment's reader waits for the handler, so a slow consumer
    slows only the segments it reads."""

    def __init__(self, workload: ScalableWorkload, subscription: str, consumer: str) -> None:
        self._workload = workload
        c = workload.context
        self._fields = {"topic": c.topic, "cluster": c.cluster, "subscription": subscription,
                        "consumer": consumer}
        self._idle: list[ClientProcess] = []
        self._hold_s = workload.knobs.process_ms / 1000

    async def __call__(self, message: Message) -> AckListener:
        w = self._workload
        w.deliveries.tick()
        process = self._idle.pop() if self._idle else ClientProcess(w.context.history, w.ids)
        value = message.payload.decode(errors="replace")
        position = f"{message.position.ledger_id}:{message.position.entry_id}"
        process.observe("recv", value=value, key=message.key or None,
                        segment=segment_of(message.segment_topic), position=position,
                        redelivery=message.redelivery, **self._fields)
        if self._hold_s:
            await asyncio.sleep(self._hold_s)
        # The position tells `duplicate` which stored copy this ack is of: a producer's
        # resend stored at another position is a copy of its own, not a duplicate.
        process.invoke("ack", value=value, position=position, **self._fields)

        def settled(confirmed: bool) -> None:
            process.complete("ok" if confirmed else "info", value=value, position=position,
                             error=None if confirmed else "unconfirmed", **self._fields)
            self._idle.append(process)
        return settled


class _Session:
    """A stream consumer's session with the controller, in the history: each registration
    attempt a `register` (its `ok` with the assignment answered; `fail` when a broker that
    does not lead refused it, `info` when its fate is unknown), each pushed assignment
    an `assign` observation, the unregistration at close an `unregister`; `reassigned`
    reads them. An attempt the close cut short ends `info` before the `unregister`, and
    what the attempt reports afterwards is dropped."""

    def __init__(self, workload: ScalableWorkload, subscription: str, consumer: str) -> None:
        c = workload.context
        self._process = ClientProcess(c.history, workload.ids)
        self._fields = {"topic": c.topic, "cluster": c.cluster, "subscription": subscription,
                        "consumer": consumer}
        self._consumer = consumer
        self._pending: str | None = None

    def _invoke(self, f: str) -> None:
        if self._pending is not None:
            self._complete(self._pending, "info", error="superseded")
        self._pending = f
        self._process.invoke(f, value=self._consumer, **self._fields)

    def _complete(self, f: str, type: str, **fields: Any) -> None:
        if self._pending != f:  # already ended by a later invoke
            return
        self._pending = None
        self._process.complete(type, value=self._consumer, **self._fields, **fields)

    @staticmethod
    def _assigned(assignment: Assignment) -> dict[str, Any]:
        return {"epoch": assignment.epoch, "detail": {"segments": list(assignment.segments)}}

    def registering(self) -> None:
        self._invoke("register")

    def registered(self, assignment: Assignment | None, error: str | None,
                   refused: bool = False) -> None:
        if assignment is None:
            self._complete("register", "fail" if refused else "info", error=error)
        else:
            self._complete("register", "ok", **self._assigned(assignment))

    def pushed(self, assignment: Assignment) -> None:
        self._process.observe("assign", value=self._consumer, **self._fields,
                              **self._assigned(assignment))

    def unregistering(self) -> None:
        self._invoke("unregister")

    def unregistered(self, error: str | None) -> None:
        if error is None:
            self._complete("unregister", "ok")
        else:
            self._complete("unregister", "info", error=error)


class ScalableWorkload:
    @dataclasses.dataclass(frozen=True)
    class Knobs(SendKnobs, ConsumerWorkKnobs):
        initial_segments: int = knob(2, "Segments the scalable topic is created with.", least=1)
        layout_interval_s: float = knob(4.0, "Mean time between the admin driver's splits and "
                                             "merges (0: none).", least=0)
        layout_until_s: float = knob(0.0, "The admin driver starts splits and merges only in "
                                          "this many first seconds of the load (0: "
                                          "throughout).", least=0)
        """A change the nemesis leaves half done then stays as the system leaves it: no later
        change of the driver's finishes it."""
        edge_key_share: float = knob(0.25, "The share of sends keyed to hash onto the first or "
                                           "last hash of an active segment.", least=0, most=1)
        """Each edge in turn: random keys almost never land there, where an off-by-one in
        routing lives."""
        layout_lag_ms: float = knob(0.0, "How late producers act on a new layout: producer n "
                                         "n times this long.", least=0)
        """Around a split or merge one producer writes to the children while another still
        writes to the parents, which a correct controller has terminated by then."""
        late_subscription: bool = knob(False, "A third subscription, `late`, read only in the "
                                              "drain by a consumer that follows the stored "
                                              "layout.")
        """Made with the others (mode `queue`), its consumer starts in the drain: a client that
        arrives after the load. A segment the stored layout lost, whose writes the live
        consumers read as they came, is missing for it: `lost`. Off by default, as it reads
        the whole run again in the drain."""
        merge_union_probe: bool = knob(False, "Before each merge, a subscription on each parent "
                                              "the other has not; after it, a probe that the "
                                              "merged segment holds both.")
        """PIP-468's union of the parents' subscriptions, which parents that hold the same ones
        cannot show (harness/workloads/merge_probe.py)."""

    def __init__(self, context: WorkloadContext) -> None:
        self.context = context = dataclasses.replace(
            context, topic=scalable_topic_name(context.topic))
        self.knobs = context.settings.knobs_as(ScalableWorkload.Knobs)
        self.ids = SequentialIds("p")
        self.deliveries = DeliveryClock()
        self._urls = service_urls(context.service_url)
        self._admin = ScalableTopicAdmin(context.admin_urls, context.topic)
        self._edges = EdgeKeys(self.knobs.edge_key_share)
        self._observer = LayoutObserver(context, self._admin)
        read = [*SUBSCRIPTIONS, LATE] if self.knobs.late_subscription else SUBSCRIPTIONS
        self._cursors = SegmentCursorObserver(context, self._stats, read)
        self._loop: ClientLoop | None = None
        self._producers: list[ScalableProducer] = []
        self._consumers: list[StreamConsumer | QueueConsumer] = []
        self._client_log: logging.Handler | None = None

    # --- open ----------------------------------------------------------------------------

    @property
    def topic(self) -> str:
        return self.context.topic

    def open(self) -> None:
        c = self.context
        self._log_the_client()
        deadline = time.monotonic() + OPEN_TIMEOUT_S
        self._until(deadline, f"create {c.topic}", self._create_topic)
        self._until(deadline, f"read the layout of {c.topic}", self._observer.poll)
        for subscription in SUBSCRIPTIONS:
            self._subscribe(subscription, subscription, deadline)
        if self.knobs.late_subscription:
            self._subscribe(LATE, "queue", deadline)
        self._loop = loop = ClientLoop("scalable-client")
        self._consumers = [
            loop.call(self._start_consumer(kind, subscription, n), OPEN_TIMEOUT_S)
            for subscription, kind in SUBSCRIPTIONS.items()
            for n in range(c.settings.consumers)]
        self._producers = [loop.call(self._start_producer(n), OPEN_TIMEOUT_S)
                           for n in range(c.settings.producers)]

    def _log_the_client(self) -> None:
        """The client library's log goes to `logs/client.log`, as the topic workload's does."""
        path = self.context.client_log
        path.parent.mkdir(parents=True, exist_ok=True)
        self._client_log = logging.FileHandler(path)
        self._client_log.setFormatter(logging.Formatter(
            "%(asctime)s %(levelname)s %(name)s: %(message)s"))
        for name in CLIENT_LOGGERS:
            client = logging.getLogger(name)
            client.setLevel(logging.INFO)
            client.addHandler(self._client_log)

    def _create_topic(self) -> dict[str, Any] | None:
        try:
            return self._admin.create(self.knobs.initial_segments)
        except AdminRefused as exc:
            if exc.status == 409:  # an earlier attempt that timed out had made it
                return {}
            raise

    def _until(self, deadline: float, what: str, attempt: Any) -> None:
        """Repeat `attempt()` until it answers something, within the open deadline."""
        while True:
            try:
                if attempt() is not None:
                    return
            except (AdminRefused, AdminUnreachable) as exc:
                problem = str(exc)
            else:
                problem = "no broker answered"
            if time.monotonic() > deadline:
                raise WorkloadOpenFailed(f"could not {what} in time: {problem}")
            time.sleep(RETRY_S)

    def _subscribe(self, subscription: str, mode: str, deadline: float) -> None:
        """Create the subscription, recording each attempt: it exists from the first `ok`
        (a cursor at the end of every active segment)."""
        c = self.context
        process = ClientProcess(c.history, self.ids)
        fields = {"topic": c.topic, "cluster": c.cluster, "subscription": subscription,
                  "value": subscription, "detail": {"mode": mode}}
        while True:
            process.invoke("subscribe", **fields)
            try:
                self._admin.create_subscription(subscription)
            except (AdminRefused, AdminUnreachable) as exc:
                failed = "fail" if isinstance(exc, AdminRefused) else "info"
                process.complete(failed, error=type(exc).__name__, **fields)
                if time.monotonic() > deadline:
                    raise WorkloadOpenFailed(f"could not subscribe {subscription} to "
                                             f"{c.topic} in time: {exc}") from None
                time.sleep(RETRY_S)
                continue
            process.complete("ok", **fields)
            return

    async def _start_consumer(self, kind: type[StreamConsumer] | type[QueueConsumer],
                              subscription: str, n: int) -> StreamConsumer | QueueConsumer:
        name = f"{subscription}-{n}"
        urls, handler = rotated(self._urls, n), _Deliveries(self, subscription, name)
        if kind is StreamConsumer:
            return await StreamConsumer(urls, self.context.topic, subscription, name, handler,
                                        CLIENT_TIMEOUT_S, client_token(),
                                        _Session(self, subscription, name)).start()
        return await kind(urls, self.context.topic, subscription, name, handler,
                          CLIENT_TIMEOUT_S, client_token()).start()

    async def _start_producer(self, n: int) -> ScalableProducer:
        knobs = self.knobs
        return await ScalableProducer(rotated(self._urls, n), self.context.topic,
                                      f"producer-{n}", knobs.send_timeout_s, client_token(),
                                      layout_lag_s=n * knobs.layout_lag_ms / 1000).start()

    def _running(self) -> ClientLoop:
        assert self._loop is not None, "open() first"
        return self._loop

    # --- load ----------------------------------------------------------------------------

    def run(self, deadline: float, stop: threading.Event) -> None:
        """Producers, the admin driver and the layout observer, all until `deadline`."""
        driver = LayoutDriver(self.context, self.knobs, self._admin, self._observer)
        layout_threads = [
            threading.Thread(target=driver.run, args=(deadline, stop), name="layout-driver",
                             daemon=True),
            threading.Thread(target=self._observer.watch, args=(deadline, stop),
                             name="layout-observer", daemon=True)]
        for thread in layout_threads:
            thread.start()
        self._cursors.start()
        run_workers(lambda n: self._produce(n, deadline, stop), len(self._producers),
                    "producer", deadline, self.knobs.send_timeout_s + 5)
        for thread in layout_threads:
            # A split or merge outstanding at the deadline ends within its HTTP timeout.
            thread.join(max(0.0, deadline - time.monotonic()) + ADMIN_TIMEOUT + 5)

    def _produce(self, worker: int, deadline: float, stop: threading.Event) -> None:
        c = self.context
        process = ClientProcess(c.history, self.ids)
        producer = self._producers[worker]
        plan = message_plan(c.seed, worker, c.settings.keys)
        edge_draws = random.Random(f"{c.seed}:edges:{worker}")
        timeout = self.knobs.send_timeout_s
        workers = len(self._producers)
        for _ in paced_slots(c.settings.rate / workers, deadline, stop, worker / workers):
            planned, value = next(plan)
            layout = producer.dag.layout
            if layout is not None:
                self._edges.learn(layout.epoch, ((s.hash_start, s.hash_end)
                                                 for s in layout.active_segments))
            key = self._edges.key_for(planned, edge_draws)
            process.invoke("send", value=value, key=key, topic=c.topic, cluster=c.cluster)
            try:
                result, epoch = self._running().call(
                    self._send(producer, key, value, timeout), timeout + 5)
            except Exception as exc:  # anything: the send may have been stored
                process.complete("info", value=value, error=type(exc).__name__)
                continue
            process.complete("ok", value=value, key=key, topic=c.topic, cluster=c.cluster,
                             segment=result.segment_id, epoch=epoch,
                             position=f"{result.position.ledger_id}:{result.position.entry_id}")

    @staticmethod
    async def _send(producer: ScalableProducer, key: str, value: str,
                    timeout: float) -> tuple[SendResult, int | None]:
        async with asyncio.timeout(timeout):
            result = await producer.send(key, value.encode())
        layout = producer.dag.layout
        return result, layout.epoch if layout is not None else None

    # --- drain and close -----------------------------------------------------------------

    def drain(self) -> bool:
        c = self.context
        fields = drain_fields(c)
        c.history.record("harness", "invoke", "drain", **fields)
        self._observer.poll()
        started = time.monotonic()
        if self.knobs.late_subscription:
            try:
                self._consumers.append(self._running().call(
                    self._start_consumer(QueueConsumer, LATE, 0), OPEN_TIMEOUT_S))
            except Exception as exc:  # no late reader: nothing can be judged lost
                c.history.record("harness", "info", "drain", error="late-subscribe-failed",
                                 detail={"message": f"{type(exc).__name__}: {exc}"},
                                 **fields)
                return False
        return wait_until_drained(c, started, self.deliveries, self._cursors.backlogs)

    def _stats(self) -> dict[str, Any] | None:
        """The topic's PIP-468 stats, None when no broker answers. Only the workload's own
        subscriptions are read from them: other cursors (the merge probe's) have no reader
        to wait for."""
        try:
            return self._admin.stats()
        except (AdminRefused, AdminUnreachable):
            return None

    def close(self) -> None:
        self._cursors.stop()
        loop, self._loop = self._loop, None
        if loop is not None:
            try:
                for client in [*self._producers, *self._consumers]:
                    loop.call(client.close(), 10)
            except Exception as exc:  # closing is best effort; the cluster is stopped next
                log.warning("closing the scalable clients: %s", exc)
            finally:
                loop.stop()
        handler, self._client_log = self._client_log, None
        if handler is not None:
            for name in CLIENT_LOGGERS:
                logging.getLogger(name).removeHandler(handler)
            handler.close()
