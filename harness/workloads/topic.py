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
Python client gives no receipt for an acknowledgement (it is grouped and sent later, and
the broker's answer is not exposed), so an `ack` completes `info`: the harness cannot know
that the broker applied it. The `duplicate` checker therefore judges nothing here; a
client with acknowledgement receipts would let it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pulsar

from harness.history import ClientProcess, SequentialIds
from harness.workloads.base import WorkloadContext
from harness.workloads.loops import (
    DeliveryClock,
    drain_fields,
    paced_slots,
    run_workers,
    wait_until_drained,
)
from harness.workloads.plan import message_plan
from harness.workloads.stats import subscription_backlogs
from starquake.errors import EnvironmentProblem

log = logging.getLogger(__name__)

LIVE = "live"
LATE = "late"
SEND_TIMEOUT_MS = 10_000
OPEN_TIMEOUT = 60.0
"""How long the cluster may take to accept the first subscribe and producers."""
RECEIVE_POLL_MS = 200
CONSUMER_TYPES = {
    "exclusive": pulsar.ConsumerType.Exclusive,
    "failover": pulsar.ConsumerType.Failover,
    "shared": pulsar.ConsumerType.Shared,
    "key_shared": pulsar.ConsumerType.KeyShared,
}
# The client refuses these before the message leaves it: certainly not written.
NOT_SENT = (pulsar.AlreadyClosed, pulsar.ProducerQueueIsFull, pulsar.MessageTooBig,
            pulsar.InvalidMessage, pulsar.TopicTerminated,
            pulsar.ProducerBlockedQuotaExceededError)
# After these the producer object is unusable and is made anew.
PRODUCER_GONE = (pulsar.AlreadyClosed, pulsar.ProducerFenced, pulsar.TopicTerminated)

T = TypeVar("T")


class WorkloadOpenFailed(EnvironmentProblem):
    """The cluster did not accept the workload's clients in time."""


@dataclass(frozen=True)
class _Consumer:
    process: ClientProcess
    name: str
    subscription: str
    consumer: pulsar.Consumer


def position_of(message_id: Any) -> str:
    """`ledgerId:entryId`, with `:batchIndex` for a message inside a batch."""
    text = f"{message_id.ledger_id()}:{message_id.entry_id()}"
    batch = message_id.batch_index()
    return f"{text}:{batch}" if batch >= 0 else text


class TopicWorkload:
    def __init__(self, context: WorkloadContext) -> None:
        self.context = context
        self._ids = SequentialIds("p")
        self._client: pulsar.Client | None = None
        self._consumers: list[_Consumer] = []
        self._producers: list[pulsar.Producer | None] = []
        self._consuming = threading.Event()
        self._consumer_threads: list[threading.Thread] = []
        self._deliveries = DeliveryClock()

    # --- open ----------------------------------------------------------------------------

    def open(self) -> None:
        c = self.context
        c.client_log.parent.mkdir(parents=True, exist_ok=True)
        self._client = pulsar.Client(
            c.service_url, operation_timeout_seconds=10,
            logger=pulsar.FileLogger(pulsar.LoggerLevel.Info, str(c.client_log)))
        deadline = time.monotonic() + OPEN_TIMEOUT
        live = [self._subscribe(f"c{n}", LIVE, c.settings.subscription_mode, deadline)
                for n in range(c.settings.consumers)]
        # The late subscription exists from now on; its consumer comes back in the drain.
        self._subscribe("late", LATE, "exclusive", deadline).consumer.close()
        self._producers = [self._retry(self._new_producer, deadline, "create a producer")
                           for _ in range(c.settings.producers)]
        for consumer in live:
            self._start_consuming(consumer)

    def _subscribe(self, name: str, subscription: str, mode: str, deadline: float) -> _Consumer:
        """Subscribe, recording each attempt: the subscription exists from the first `ok`."""
        c = self.context
        process = ClientProcess(c.history, self._ids)
        fields = {"topic": c.topic, "cluster": c.cluster, "subscription": subscription,
                  "consumer": name, "detail": {"mode": mode}}
        while True:
            process.invoke("subscribe", value=subscription, **fields)
            try:
                consumer = self._connected().subscribe(
                    c.topic, subscription, consumer_type=CONSUMER_TYPES[mode],
                    consumer_name=name, initial_position=pulsar.InitialPosition.Earliest,
                    receiver_queue_size=100)
            except pulsar.PulsarException as exc:
                process.complete("info", value=subscription, error=type(exc).__name__, **fields)
                if time.monotonic() > deadline:
                    raise WorkloadOpenFailed(f"consumer {name} could not subscribe to "
                                             f"{c.topic} in time: {exc}") from None
                time.sleep(0.5)
                continue
            process.complete("ok", value=subscription, **fields)
            return _Consumer(process, name, subscription, consumer)

    def _new_producer(self) -> pulsar.Producer:
        return self._connected().create_producer(
            self.context.topic, batching_enabled=False, send_timeout_millis=SEND_TIMEOUT_MS,
            block_if_queue_full=True, max_pending_messages=10)

    def _retry(self, make: Callable[[], T], deadline: float, what: str) -> T:
        while True:
            try:
                return make()
            except pulsar.PulsarException as exc:
                if time.monotonic() > deadline:
                    raise WorkloadOpenFailed(f"could not {what} on {self.context.topic} "
                                             f"by the deadline: {exc}") from None
                time.sleep(0.5)

    def _connected(self) -> pulsar.Client:
        assert self._client is not None, "open() first"
        return self._client

    # --- load ----------------------------------------------------------------------------

    def run(self, deadline: float, stop: threading.Event) -> None:
        run_workers(lambda n: self._produce(n, deadline, stop), len(self._producers),
                    "producer", deadline, SEND_TIMEOUT_MS / 1000 + 5)

    def _produce(self, worker: int, deadline: float, stop: threading.Event) -> None:
        c = self.context
        process = ClientProcess(c.history, self._ids)
        plan = message_plan(c.seed, worker, c.settings.keys)
        workers = len(self._producers)
        for _ in paced_slots(c.settings.rate / workers, deadline, stop, worker / workers):
            producer = self._producers[worker]
            if producer is None:
                try:
                    producer = self._producers[worker] = self._new_producer()
                except pulsar.PulsarException:
                    continue  # the next slot tries again; no operation was attempted
            key, value = next(plan)
            self._send(process, producer, worker, key, value)

    def _send(self, process: ClientProcess, producer: pulsar.Producer, worker: int,
              key: str, value: str) -> None:
        c = self.context
        process.invoke("send", value=value, key=key, topic=c.topic, cluster=c.cluster)
        try:
            message_id = producer.send(value.encode(), partition_key=key)
        except NOT_SENT as exc:
            process.complete("fail", value=value, error=type(exc).__name__)
            self._forget_broken(worker, exc)
        except pulsar.PulsarException as exc:
            process.complete("info", value=value, error=type(exc).__name__)
            self._forget_broken(worker, exc)
        else:
            process.complete("ok", value=value, key=key, topic=c.topic, cluster=c.cluster,
                             position=position_of(message_id))

    def _forget_broken(self, worker: int, exc: Exception) -> None:
        if isinstance(exc, PRODUCER_GONE):
            producer, self._producers[worker] = self._producers[worker], None
            try:
                if producer is not None:
                    producer.close()
            except pulsar.PulsarException:
                pass

    # --- consuming -----------------------------------------------------------------------

    def _start_consuming(self, consumer: _Consumer) -> None:
        self._consumers.append(consumer)
        thread = threading.Thread(target=self._consume, args=(consumer,),
                                  name=f"consumer-{consumer.name}", daemon=True)
        thread.start()
        self._consumer_threads.append(thread)

    def _consume(self, reader: _Consumer) -> None:
        """Receive, record, acknowledge, until `close()`."""
        c = self.context
        process, consumer = reader.process, reader.consumer
        fields = {"topic": c.topic, "subscription": reader.subscription,
                  "consumer": reader.name, "cluster": c.cluster}
        while not self._consuming.is_set():
            try:
                message = consumer.receive(timeout_millis=RECEIVE_POLL_MS)
            except pulsar.Timeout:
                continue
            except pulsar.PulsarException:
                self._consuming.wait(RECEIVE_POLL_MS / 1000)
                continue
            self._deliveries.tick()
            value = message.data().decode(errors="replace")
            process.observe("recv", value=value, key=message.partition_key() or None,
                            position=position_of(message.message_id()),
                            redelivery=message.redelivery_count(), **fields)
            process.invoke("ack", value=value, **fields)
            try:
                consumer.acknowledge(message)
            except pulsar.PulsarException as exc:
                process.complete("info", value=value, error=type(exc).__name__, **fields)
                continue
            # No receipt: handed to the client, not known to be applied (module docstring).
            process.complete("info", value=value, error="unconfirmed", **fields)

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
            return False
        return wait_until_drained(c, started, self._deliveries,
                                  lambda: subscription_backlogs(c.admin_urls, c.topic))

    def close(self) -> None:
        self._consuming.set()
        for thread in self._consumer_threads:
            thread.join(RECEIVE_POLL_MS / 1000 * 5 + 1)
        client, self._client = self._client, None
        if client is not None:
            try:
                client.close()
            except pulsar.PulsarException as exc:
                log.warning("closing the client: %s", exc)
