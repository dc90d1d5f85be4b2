"""The probes of size: the largest message the client sends whole (just under the max
message size, with its metadata) arrives intact, and so does one larger than the limit
sent in chunks (`chunking_enabled`, batching off), which the consumer reassembles.

They assume the target keeps Pulsar's default `maxMessageSize` (`MAX_MESSAGE_SIZE`), and
need the broker's frame limit to leave room around a full-size message for its command
(Pulsar's padding). The messages are megabytes, too large for a history's `value`: the
group records its subscribe and the probes, not the sends and deliveries."""

from __future__ import annotations

import random
from typing import Any

import pulsar

from harness.workloads.contract.clients import Clients, Countdown, GroupSpec
from harness.workloads.contract.limits import LARGE_SEND_S, MAX_MESSAGE_SIZE, RECEIVE_BOUND_S
from harness.workloads.contract.recording import CouldNotRun, Group, Member

INTACT = {"sent": "Ok", "received": "intact"}
SIZE_STEP = 4
"""Bytes taken off at a time while the client says a message is too big (its metadata
counts against the limit, and its size varies with the producer name and the target)."""
SIZE_TRIES = 64
CHUNKED_SIZE = MAX_MESSAGE_SIZE + MAX_MESSAGE_SIZE // 5
"""Over the limit, so the client must cut it into two chunks."""


def large(clients: Clients, group: Group) -> None:
    """The largest unchunked message, then one in chunks, each received intact."""
    member = clients.subscribe(group, "c0", "large", "exclusive")
    payloads = random.Random(group.topic).randbytes(CHUNKED_SIZE)
    whole = clients.producer(group, batching_enabled=False)
    sent = _send_largest(whole, payloads)
    group.expect("max-size-message", INTACT, _arrival(member, sent, payloads),
                 size=sent[1])
    group.close_one(whole)  # so an unanswered send stops its resending now
    chunks = clients.producer(group, batching_enabled=False, chunking_enabled=True)
    sent = (_send(chunks, payloads), len(payloads))
    group.expect("chunked-message", INTACT, _arrival(member, sent, payloads),
                 size=len(payloads))


def _send_largest(producer: pulsar.Producer, payloads: bytes) -> tuple[str, int]:
    """The result of sending the largest prefix of `payloads` under the limit the client
    accepts, and its size; the client refuses a larger one at once (MessageTooBig)."""
    for tried in range(SIZE_TRIES):
        size = MAX_MESSAGE_SIZE - SIZE_STEP * (tried + 1)
        result = _send(producer, payloads[:size])
        if result != pulsar.Result.MessageTooBig.name:
            return result, size
    raise CouldNotRun(f"the client refused every message of {size} bytes and more")


def _send(producer: pulsar.Producer, payload: bytes) -> str:
    """The send's result, or `unanswered` when it has none within LARGE_SEND_S."""
    results: list[Any] = []
    done = Countdown(1)

    def sent(result: pulsar.Result, _message_id: Any) -> None:
        results.append(result)
        done.tick()

    producer.send_async(payload, sent)
    if not done.wait(LARGE_SEND_S):
        return "unanswered"
    return str(results[0].name)


def _arrival(member: Member, sent: tuple[str, int], payloads: bytes) -> dict[str, Any]:
    """What became of a send and of its message at the consumer: `intact` when the bytes
    received are those sent."""
    result, size = sent
    if result != pulsar.Result.Ok.name:
        return {"sent": result}
    try:
        message = member.receive(int(RECEIVE_BOUND_S * 1000))
    except pulsar.Timeout:
        return {"sent": result, "received": "nothing"}
    data = message.data()
    assert member.consumer is not None
    member.consumer.acknowledge(message)
    return {"sent": result, "received": "intact" if data == payloads[:size]
            else f"{len(data)} bytes, not those sent"}


GROUPS = (GroupSpec("large", ("max-size-message", "chunked-message"), large),)
