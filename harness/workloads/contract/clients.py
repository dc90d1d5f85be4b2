"""The recorded client operations the probes are made of: subscribes, readers, producers,
sends one by one or batched, acknowledgements the broker confirmed, and termination
through the admin API. Each is recorded as the `topic` workload records it, so the
ordinary checkers judge it; a setup that fails raises `CouldNotRun`."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pulsar

from harness.admin_api import AdminError
from harness.credentials import client_authentication
from harness.workloads.base import WorkloadContext
from harness.workloads.client_log import client_logger
from harness.workloads.contract.limits import (
    CONFIRM_POLL_S,
    CONFIRM_S,
    KEYS,
    OPERATION_TIMEOUT_S,
    RECEIVER_QUEUE,
    SETUP_S,
)
from harness.workloads.contract.receiving import value_of
from harness.workloads.contract.recording import CouldNotRun, Group, Member
from harness.workloads.official_client import (
    PRODUCER_OPTIONS,
    SEND_TIMEOUT_MS,
    Sent,
    close_client,
    position_of,
    retry_until,
    send_recorded,
    subscribe_recorded,
)
from harness.workloads.stats import (
    owner_request,
    subscription_backlogs,
    topic_path,
    topic_subscriptions,
)
from history.writer import ClientProcess, SequentialIds


class Clients:
    """The workload's one client, the history its operations are recorded in and the ids
    of the processes that record them."""

    def __init__(self, context: WorkloadContext, ids: SequentialIds) -> None:
        self.context = context
        self._ids = ids
        self._client: pulsar.Client | None = None

    def connect(self) -> None:
        c = self.context
        self._client = pulsar.Client(
            c.service_url, operation_timeout_seconds=OPERATION_TIMEOUT_S,
            authentication=client_authentication(),
            logger=client_logger(c.client_log))

    def close(self) -> None:
        client, self._client = self._client, None
        close_client(client)

    def _connected(self) -> pulsar.Client:
        assert self._client is not None, "connect() first"
        return self._client

    def subscribe(self, group: Group, name: str, subscription: str, mode: str,
                  **options: Any) -> Member:
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
        return Member(process, fields, consumer.receive, consumer)

    def reader(self, group: Group, probe: str, start: Any,
               **options: Any) -> Member | dict[str, str]:
        """A reader from `start`, its deliveries recorded under the probe's name as
        subscription and consumer (a reader's own subscription is the client's secret);
        the error, as an observation, when the client could not make it."""
        try:
            reader = self._connected().create_reader(
                group.topic, start, receiver_queue_size=RECEIVER_QUEUE, **options)
        except pulsar.PulsarException as exc:
            return {"error": type(exc).__name__}
        group.closables.append(reader)
        fields = {"topic": group.topic, "subscription": probe, "consumer": probe,
                  "cluster": self.context.cluster}
        return Member(ClientProcess(self.context.history, self._ids), fields,
                      reader.read_next, reader=reader)

    def process(self) -> ClientProcess:
        """A new process of the workload, to record a member's operations under."""
        return ClientProcess(self.context.history, self._ids)

    def raw_consumer(self, group: Group, **options: Any) -> pulsar.Consumer:
        """A consumer of the group's topic whose deliveries are not recorded (their
        values are records, or sent twice on purpose): only the probes judge them."""
        consumer = retry_until(
            lambda: self._connected().subscribe(group.topic, group.name, **options),
            time.monotonic() + SETUP_S, f"subscribe to {group.topic}")
        group.closables.append(consumer)
        return consumer

    def raw_reader(self, group: Group, start: pulsar.MessageId) -> pulsar.Reader:
        """A reader of the group's topic from `start`, its reads not recorded."""
        reader = retry_until(lambda: self._connected().create_reader(group.topic, start),
                             time.monotonic() + SETUP_S, f"read {group.topic}")
        group.closables.append(reader)
        return reader

    def pattern_consumer(self, group: Group, pattern: re.Pattern[str],
                         **options: Any) -> pulsar.Consumer:
        """A consumer of every topic `pattern` matches, subscribed as the group's name,
        closed with the group; raises the client's refusal."""
        consumer = self._connected().subscribe(
            pattern, group.name, **{"receiver_queue_size": RECEIVER_QUEUE, **options})
        group.closables.append(consumer)
        return consumer

    def subscribe_pattern(self, group: Group, pattern: re.Pattern[str]) -> dict[str, Any]:
        """A pattern consumer made or refused: the answer as an observation."""
        try:
            self.pattern_consumer(group, pattern)
        except pulsar.PulsarException as exc:
            return {"error": type(exc).__name__}
        return {"accepted": True}

    def _producer(self, topic: str, **options: Any) -> pulsar.Producer:
        return self._connected().create_producer(topic, **{**PRODUCER_OPTIONS, **options})

    def producer(self, group: Group, topic: str | None = None,
                 **options: Any) -> pulsar.Producer:
        """A producer on `topic` (the group's by default), closed with the group (setup:
        retried until accepted)."""
        where = topic or group.topic
        producer = retry_until(lambda: self._producer(where, **options),
                               time.monotonic() + SETUP_S, f"create a producer on {where}")
        group.closables.append(producer)
        return producer

    def accepted_producer(self, group: Group, **options: Any) -> dict[str, bool]:
        """A producer the cluster accepted at the first attempt (closed with the group);
        raises the client's refusal."""
        group.closables.append(self._producer(group.topic, **options))
        return {"accepted": True}

    def send(self, group: Group, values: Sequence[str], topic: str | None = None,
             **message_options: Any) -> list[Any]:
        """Each value sent on its own to `topic` (the group's by default), keyed,
        recorded; the ids the broker gave them."""
        producer = self.producer(group, topic)
        process = self.process()
        ids = []
        for n, value in enumerate(values):
            sent = send_recorded(process, producer, value,
                                 self._send_fields(group, n, topic), **message_options)
            if sent.message_id is None:
                raise CouldNotRun(f"the send of {value} failed: {sent.error}")
            ids.append(sent.message_id)
        return ids

    def send_once(self, group: Group, value: str, **message_options: Any) -> Sent:
        """One more send on the group's last producer, whatever comes of it."""
        producer = next(p for p in reversed(group.closables) if isinstance(p, pulsar.Producer))
        return send_recorded(ClientProcess(self.context.history, self._ids), producer, value,
                             self._send_fields(group, 0), **message_options)

    def _send_fields(self, group: Group, n: int, topic: str | None = None) -> dict[str, Any]:
        return {"key": f"k{n % KEYS}", "topic": topic or group.topic,
                "cluster": self.context.cluster}

    def send_batched(self, group: Group, values: Sequence[str], *, key_based: bool) -> None:
        """Every value sent asynchronously, so the client batches them; each send under a
        process of its own, as a batch holds many sends outstanding at once (Key_Shared
        needs batches of one key, so there the batching is by key)."""
        producer = self.producer(
            group, batching_enabled=True, batching_max_messages=RECEIVER_QUEUE,
            batching_max_publish_delay_ms=20, max_pending_messages=len(values),
            batching_type=(pulsar.BatchingType.KeyBased if key_based
                           else pulsar.BatchingType.Default))
        done = Countdown(len(values))
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
            raise CouldNotRun("a batched send never completed")

    def acknowledge_confirmed(self, group: Group, member: Member, message: pulsar.Message,
                              *, backlog: int, cumulative: bool = False) -> None:
        """An `ack` completed `ok` only once the broker counts at most `backlog` messages
        left in the subscription: it applied the acknowledgement. Not confirmed within
        `CONFIRM_S`, the `ack` is `info` and the group cannot judge what follows."""
        assert member.consumer is not None
        value = value_of(message)
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
        raise CouldNotRun(f"the broker never counted the acknowledgement of {value}")

    def subscriptions(self, topic: str) -> list[str]:
        """The subscriptions the admin API lists on `topic`."""
        names = topic_subscriptions(self.context.admin_urls, topic)
        if names is None:
            raise CouldNotRun(f"no broker listed the subscriptions of {topic}")
        return names

    def set_up(self, method: str, path: str, body: object = None) -> Any:
        """An admin change a group needs before its probes (a partitioned topic, a
        topic's policy); refused, the group cannot run."""
        try:
            return owner_request(self.context.admin_urls, method, path, body)
        except (AdminError, OSError) as exc:
            raise CouldNotRun(f"{method} {path}: {exc}") from None

    def terminate_topic(self, topic: str) -> str | dict[str, str]:
        """Terminate through the admin API; the last position it answers."""
        try:
            answer = owner_request(self.context.admin_urls, "POST",
                                   topic_path(topic) + "/terminate")
        except AdminError as exc:
            return {"error": f"HTTP {exc.status}"}
        except OSError as exc:
            raise CouldNotRun(f"no broker would terminate {topic}: {exc}") from None
        if isinstance(answer, dict) and "ledgerId" in answer and "entryId" in answer:
            return f"{answer['ledgerId']}:{answer['entryId']}"
        return {"answer": repr(answer)}


Probe = Callable[[Clients, Group], None]
"""What runs one group of probes."""


@dataclass(frozen=True)
class GroupSpec:
    """A group of probes as the workload runs it: its name (its topic's suffix), every
    probe it records, and what runs it. Each module of probes lists its own groups."""

    name: str
    probes: tuple[str, ...]
    run: Probe


class Countdown:
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
