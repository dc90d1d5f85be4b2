"""What every workload on the official `pulsar-client` does the same way: producers that
keep one message in flight, retrying a client call until a deadline, and recording
subscribes, sends and each delivered message (a `recv` observation and its `ack`).

`position=False` leaves positions out, for clients that cannot tell which cluster
assigned them (a position means something only in its cluster).

The official Python client gives no receipt for an acknowledgement (it is grouped and sent
later, and the broker's answer is not exposed). The workloads' acks are therefore settled
by the subscription's durable cursor (`harness.workloads.cursors`): `ok` once a reading
of the cursor covers the delivered message, else `info` with `error` `unconfirmed`.
`acknowledge_unconfirmed` (the contract probes' acks, which no cursor reading settles)
completes `info` at once.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import pulsar

from harness.workloads.base import WorkloadContext, WorkloadOpenFailed
from harness.workloads.cursors import CursorObserver
from harness.workloads.loops import paced_slots, run_workers
from harness.workloads.plan import message_plan
from harness.workloads.shared_knobs import OfficialClientKnobs
from history.writer import ClientProcess, SequentialIds

log = logging.getLogger(__name__)

LIVE = "live"
"""The subscription the scenario's consumers read throughout the load."""
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

PRODUCER_OPTIONS: dict[str, Any] = {
    "batching_enabled": False, "send_timeout_millis": SEND_TIMEOUT_MS,
    "block_if_queue_full": True, "max_pending_messages": 10}
"""Unbatched, so every message has its own entry and position."""
RETRY_PAUSE_S = 0.5


def producer_options(knobs: OfficialClientKnobs) -> dict[str, Any]:
    """PRODUCER_OPTIONS as a scenario sets them: the client gives a send up (`Timeout`,
    recorded `info`) after `send_timeout_s`, and a producer's queue holds one message of
    each of its `processes`."""
    return {**PRODUCER_OPTIONS, "send_timeout_millis": round(knobs.send_timeout_s * 1000),
            "max_pending_messages": max(PRODUCER_OPTIONS["max_pending_messages"],
                                        knobs.processes)}


def position_of(message_id: Any) -> str:
    """`ledgerId:entryId`, with `:batchIndex` for a message inside a batch."""
    text = f"{message_id.ledger_id()}:{message_id.entry_id()}"
    batch = message_id.batch_index()
    return f"{text}:{batch}" if batch >= 0 else text


def retry_until(make: Callable[[], T], deadline: float, what: str) -> T:
    """`make()`, again every `RETRY_PAUSE_S` while the client refuses, until `deadline`;
    then WorkloadOpenFailed saying what could not be done."""
    while True:
        try:
            return make()
        except pulsar.PulsarException as exc:
            if time.monotonic() > deadline:
                raise WorkloadOpenFailed(f"could not {what} by the deadline: {exc}") from None
            time.sleep(RETRY_PAUSE_S)


def subscribe_recorded(process: ClientProcess, client: pulsar.Client, topic: str,
                       subscription: str, mode: str, deadline: float, *,
                       fields: dict[str, Any], replicated: bool,
                       options: dict[str, Any] | None = None) -> pulsar.Consumer:
    """Subscribe from the earliest message, recording each attempt (the subscription
    exists from the first `ok`); retried until `deadline`. `fields` names the consumer
    and the cluster; `options` are further `Client.subscribe` arguments, over the
    defaults here (a receiver queue of 100)."""
    fields = {"topic": topic, "subscription": subscription, "detail": {"mode": mode},
              **fields}
    arguments = {"receiver_queue_size": 100, **(options or {})}
    while True:
        process.invoke("subscribe", value=subscription, **fields)
        try:
            consumer = client.subscribe(
                topic, subscription, consumer_type=CONSUMER_TYPES[mode],
                consumer_name=fields["consumer"],
                initial_position=pulsar.InitialPosition.Earliest,
                replicate_subscription_state_enabled=replicated, **arguments)
        except pulsar.PulsarException as exc:
            process.complete("info", value=subscription, error=type(exc).__name__, **fields)
            if time.monotonic() > deadline:
                raise WorkloadOpenFailed(f"consumer {fields['consumer']} could not subscribe "
                                         f"to {topic} in time: {exc}") from None
            time.sleep(RETRY_PAUSE_S)
            continue
        process.complete("ok", value=subscription, **fields)
        return consumer


@dataclass(frozen=True)
class Sent:
    """How a recorded send ended."""

    usable: bool
    """False when the producer is unusable from now on (closed): the caller makes anew."""
    message_id: Any = None
    """The id the broker assigned, when the send was `ok`."""
    error: str | None = None
    """The client's error, when it was not."""


DEDUPLICATED = {"deduplicated": True}
"""The `detail` of a `send` `ok` whose receipt names no position: the broker had stored
the message before and dropped this copy."""


def send_recorded(process: ClientProcess, producer: pulsar.Producer, value: str,
                  fields: dict[str, Any], *, position: bool = True,
                  **message_options: Any) -> Sent:
    """One `send` of `value` keyed `fields["key"]`: `ok` with the position (none, with
    `DEDUPLICATED`, when the broker dropped it as a copy of a message it stored before),
    `fail` when the client refused it before it left, `info` otherwise. `message_options`
    go to the client's `send` (e.g. `deliver_after`)."""
    process.invoke("send", value=value, **fields)
    try:
        message_id = producer.send(value.encode(), partition_key=fields["key"],
                                   **message_options)
    except pulsar.PulsarException as exc:
        outcome = "fail" if isinstance(exc, NOT_SENT) else "info"
        error = type(exc).__name__
        process.complete(outcome, value=value, error=error, **fields)
        if isinstance(exc, PRODUCER_GONE):
            close_quietly(producer)
            return Sent(False, error=error)
        return Sent(True, error=error)
    if message_id.ledger_id() < 0:
        # A deduplicating broker's receipt for a message it had stored already (a resend
        # after a reconnect): Pulsar answers `-1:-1`, not the stored copy's position.
        process.complete("ok", value=value, detail=DEDUPLICATED, **fields)
        return Sent(True, message_id)
    extra = {"position": position_of(message_id)} if position else {}
    process.complete("ok", value=value, **extra, **fields)
    return Sent(True, message_id)


def produce(context: WorkloadContext, ids: SequentialIds, worker: int, workers: int,
            producer: pulsar.Producer, make: Callable[[], pulsar.Producer],
            fields: Callable[[str], dict[str, Any]], deadline: float, stop: threading.Event,
            *, position: bool = True) -> None:
    """Producer `worker` of `workers`: its share of the scenario's rate from the
    scenario's `processes` logical processes, each in its own thread with one message in
    flight, until `deadline` or `stop`. They share `producer`, so several of its sends are
    in flight at once, as from an application's threads; a process whose send timed out
    goes on under a fresh process id at once, so sends are still invoked while a fault
    holds the earlier ones."""
    knobs = context.settings.knobs_as(OfficialClientKnobs)
    processes = knobs.processes
    run_workers(lambda p: _send_loop(context, ids, worker * processes + p, workers * processes,
                                     producer, make, fields, deadline, stop, position),
                processes, f"producer-{worker}", deadline, knobs.send_timeout_s + 5)


def _send_loop(context: WorkloadContext, ids: SequentialIds, process_number: int,
               processes: int, producer: pulsar.Producer, make: Callable[[], pulsar.Producer],
               fields: Callable[[str], dict[str, Any]], deadline: float, stop: threading.Event,
               position: bool) -> None:
    """Logical process `process_number` of the workload's `processes`: one message at a
    time from its seeded plan, at its share of the rate. A producer that became unusable
    is replaced by `make()` at a later slot, for this process alone."""
    process = ClientProcess(context.history, ids)
    plan = message_plan(context.seed, process_number, context.settings.keys)
    current: pulsar.Producer | None = producer
    for _ in paced_slots(context.settings.rate / processes, deadline, stop,
                         process_number / processes):
        if current is None:
            try:
                current = make()
            except pulsar.PulsarException:
                continue  # the next slot tries again; no operation was attempted
        key, value = next(plan)
        if not send_recorded(process, current, value, fields(key), position=position).usable:
            current = None


def close_quietly(closable: pulsar.Producer | pulsar.Consumer) -> None:
    try:
        closable.close()
    except pulsar.PulsarException:
        pass


def close_client(client: pulsar.Client | None) -> None:
    """Close a workload's client at the end of a run, whatever state the cluster is in: a
    failure is logged, never raised, so the run still tears down and is judged."""
    if client is None:
        return
    try:
        client.close()
    except pulsar.PulsarException as exc:
        log.warning("closing a client: %s", exc)


def next_message(consumer: pulsar.Consumer, stop: threading.Event) -> pulsar.Message | None:
    """The next delivered message, or None after one poll without any (after a client
    error, once the poll interval has passed or `stop` was set)."""
    try:
        return consumer.receive(timeout_millis=RECEIVE_POLL_MS)
    except pulsar.Timeout:
        return None
    except pulsar.PulsarException:
        stop.wait(RECEIVE_POLL_MS / 1000)
        return None


def wait_out_lag(message: pulsar.Message, lag_s: float, stop: threading.Event) -> bool:
    """Wait until `lag_s` after the message's publication (a consumer that handles each
    message that long after it was sent); False if `stop` was set first."""
    due = message.publish_timestamp() / 1000 + lag_s
    return not stop.wait(max(0.0, due - time.time()))


def record_delivery(process: ClientProcess, message: pulsar.Message, fields: dict[str, Any],
                    *, position: bool = True) -> str:
    """The `recv` of one delivered message; its value. `fields`: the topic, subscription,
    consumer and cluster every event carries."""
    value: str = message.data().decode(errors="replace")
    extra = {"position": position_of(message.message_id())} if position else {}
    process.observe("recv", value=value, key=message.partition_key() or None,
                    redelivery=message.redelivery_count(), **extra, **fields)
    return value


def record_and_acknowledge(process: ClientProcess, consumer: pulsar.Consumer,
                           message: pulsar.Message, fields: dict[str, Any],
                           cursors: CursorObserver, *, position: bool = True) -> None:
    """The `recv` of a delivered message, then its `ack` (`acknowledge_recorded`).
    `fields`: the topic, subscription, consumer and cluster every event carries."""
    value = record_delivery(process, message, fields, position=position)
    acknowledge_recorded(consumer, message, value, fields, cursors, position=position)


def acknowledge_recorded(consumer: pulsar.Consumer, message: pulsar.Message, value: str,
                         fields: dict[str, Any], cursors: CursorObserver, *,
                         position: bool = True, cumulative: bool = False) -> None:
    """The `ack` of a message already recorded as received, left pending for the
    subscription's cursor to confirm (`harness.workloads.cursors`). The cursor is compared
    with the delivered position even when the history leaves positions out
    (`position=False`). A `cumulative` ack acknowledges every message up to this one."""
    delivered = position_of(message.message_id())
    ack = cursors.invoke_ack(value, delivered if position else None, fields,
                             confirm_at=delivered, cumulative=cumulative)
    try:
        if cumulative:
            consumer.acknowledge_cumulative(message)
        else:
            consumer.acknowledge(message)
    except pulsar.PulsarException as exc:
        ack.refused(type(exc).__name__)
        return
    cursors.await_cursor(ack)


def acknowledge_unconfirmed(process: ClientProcess, consumer: pulsar.Consumer,
                            message: pulsar.Message, value: str,
                            fields: dict[str, Any]) -> None:
    """The `ack` of a message already recorded as received: `info`, as the client gives
    no receipt (see the module)."""
    process.invoke("ack", value=value, **fields)
    try:
        consumer.acknowledge(message)
    except pulsar.PulsarException as exc:
        process.complete("info", value=value, error=type(exc).__name__, **fields)
        return
    process.complete("info", value=value, error="unconfirmed", **fields)
