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
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import pulsar

from harness.credentials import client_authentication
from harness.workloads.base import WorkloadContext, WorkloadOpenFailed
from harness.workloads.cursors import CursorObserver
from harness.workloads.loops import DeliveryClock, drain_fields, run_workers, wait_until_drained
from harness.workloads.official_client import (
    LIVE,
    OPEN_TIMEOUT,
    PRODUCER_OPTIONS,
    RECEIVE_POLL_MS,
    SEND_TIMEOUT_MS,
    close_client,
    next_message,
    produce,
    record_and_acknowledge,
    retry_until,
    subscribe_recorded,
)
from harness.workloads.stats import subscription_backlogs
from history.writer import ClientProcess, SequentialIds

LATE = "late"


@dataclass(frozen=True)
class _Consumer:
    process: ClientProcess
    name: str
    subscription: str
    consumer: pulsar.Consumer


class TopicWorkload:
    def __init__(self, context: WorkloadContext) -> None:
        self.context = context
        self._ids = SequentialIds("p")
        self._client: pulsar.Client | None = None
        self._consumers: list[_Consumer] = []
        self._producers: list[pulsar.Producer] = []
        self._consuming = threading.Event()
        self._consumer_threads: list[threading.Thread] = []
        self._deliveries = DeliveryClock()
        self._cursors = CursorObserver(context.history, self._ids)
        self._cursors.watch(context.cluster, context.admin_urls, context.topic)

    # --- open ----------------------------------------------------------------------------

    def open(self) -> None:
        c = self.context
        c.client_log.parent.mkdir(parents=True, exist_ok=True)
        self._client = pulsar.Client(
            c.service_url, operation_timeout_seconds=10,
            authentication=client_authentication(),
            logger=pulsar.FileLogger(pulsar.LoggerLevel.Info, str(c.client_log)))
        deadline = time.monotonic() + OPEN_TIMEOUT
        live = [self._subscribe(f"c{n}", LIVE, c.settings.subscription_mode, deadline)
                for n in range(c.settings.consumers)]
        # The late subscription exists from now on; its consumer comes back in the drain.
        self._subscribe("late", LATE, "exclusive", deadline).consumer.close()
        self._producers = [retry_until(self._new_producer, deadline,
                                       f"create a producer on {c.topic}")
                           for _ in range(c.settings.producers)]
        self._cursors.start()
        for consumer in live:
            self._start_consuming(consumer)

    def _subscribe(self, name: str, subscription: str, mode: str, deadline: float) -> _Consumer:
        """Subscribe, recording each attempt: the subscription exists from the first `ok`."""
        c = self.context
        process = ClientProcess(c.history, self._ids)
        consumer = subscribe_recorded(process, self._connected(), c.topic, subscription, mode,
                                      deadline, replicated=False,
                                      fields={"consumer": name, "cluster": c.cluster})
        return _Consumer(process, name, subscription, consumer)

    def _new_producer(self) -> pulsar.Producer:
        return self._connected().create_producer(self.context.topic, **PRODUCER_OPTIONS)

    def _connected(self) -> pulsar.Client:
        assert self._client is not None, "open() first"
        return self._client

    # --- load ----------------------------------------------------------------------------

    def run(self, deadline: float, stop: threading.Event) -> None:
        c = self.context
        workers = len(self._producers)
        run_workers(lambda n: produce(
            c, self._ids, n, workers, self._producers[n], self._new_producer,
            lambda key: {"key": key, "topic": c.topic, "cluster": c.cluster}, deadline, stop),
            workers, "producer", deadline, SEND_TIMEOUT_MS / 1000 + 5)

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
        fields = {"topic": c.topic, "subscription": reader.subscription,
                  "consumer": reader.name, "cluster": c.cluster}
        while not self._consuming.is_set():
            message = next_message(reader.consumer, self._consuming)
            if message is None:
                continue
            self._deliveries.tick()
            record_and_acknowledge(reader.process, reader.consumer, message, fields,
                                   self._cursors)

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
        self._consuming.set()
        for thread in self._consumer_threads:
            thread.join(RECEIVE_POLL_MS / 1000 * 5 + 1)
        client, self._client = self._client, None
        close_client(client)
