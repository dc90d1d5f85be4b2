"""The probes of a topic's schema: records written with an Avro schema come back as the
same records, decoded at once (the consumer fetches the writer's schema from the broker);
a producer whose schema the topic's compatibility strategy refuses is refused with
IncompatibleSchema; one whose new field has a default is accepted.

These hinge on the namespace's compatibility strategy: the probes assume Pulsar's default
(FULL, or BACKWARD on older brokers), under which both verdicts hold."""

from __future__ import annotations

import time
from typing import Any

import pulsar
from pulsar.schema import AvroSchema, Integer, Record, String

from harness.workloads.contract.clients import Clients, GroupSpec
from harness.workloads.contract.limits import MESSAGES, PROMPT_S, RECEIVE_BOUND_S
from harness.workloads.contract.recording import Group, observed


def _record(**fields: Any) -> type[Record]:
    """A record class named `Reading` (Avro matches records by name, and the client names
    a record after its class)."""
    return type("Reading", (Record,), dict(fields))


Reading = _record(sensor=String(), value=Integer(required=True))
ReadingWithUnit = _record(sensor=String(), value=Integer(required=True),
                          unit=String(default="none", required=True, required_default=True))
"""A field more, with a default: compatible with `Reading` both ways. The field is a plain
`string`: Avro takes a union's default from its first branch, so the client's optional
field (`["null", "string"]`) may default to null only, and Pulsar's registry refuses the
schema otherwise (`Invalid default for field unit`)."""
ReadingAsText = _record(sensor=String(), value=String(required=True))
"""`value` of another type: compatible with `Reading` in no direction."""


def schemas(clients: Clients, group: Group) -> None:
    """Readings written and read with `Reading`'s Avro schema, each decoded promptly; then
    a producer with `ReadingAsText` (refused) and one with `ReadingWithUnit` (accepted)."""
    consumer = clients.raw_consumer(group, schema=AvroSchema(Reading),
                                    initial_position=pulsar.InitialPosition.Earliest)
    producer = clients.producer(group, schema=AvroSchema(Reading))
    sent = [Reading(sensor=f"s{n}", value=n) for n in range(MESSAGES // 4)]
    for reading in sent:
        producer.send(reading)
    got: list[dict[str, object]] = []
    slowest_s = 0.0
    deadline = time.monotonic() + RECEIVE_BOUND_S
    while len(got) < len(sent) and time.monotonic() < deadline:
        try:
            message = consumer.receive(timeout_millis=int(PROMPT_S * 1000))
        except pulsar.Timeout:
            continue
        started = time.monotonic()
        value = message.value()  # the client may ask the broker for the writer's schema
        slowest_s = max(slowest_s, time.monotonic() - started)
        got.append({"sensor": value.sensor, "value": value.value})
        consumer.acknowledge(message)
    group.expect("schema-records-round-trip",
                 [{"sensor": r.sensor, "value": r.value} for r in sent], got)
    group.expect("schema-decoded-promptly", {"prompt": True},
                 {"prompt": slowest_s < PROMPT_S}, slowest_s=round(slowest_s, 3))
    group.expect("schema-incompatible-refused", {"error": "IncompatibleSchema"},
                 observed(lambda: clients.accepted_producer(
                     group, schema=AvroSchema(ReadingAsText))))
    group.expect("schema-compatible-accepted", {"accepted": True},
                 observed(lambda: clients.accepted_producer(
                     group, schema=AvroSchema(ReadingWithUnit))))


GROUPS = (GroupSpec("schemas", ("schema-records-round-trip", "schema-decoded-promptly",
                                "schema-incompatible-refused", "schema-compatible-accepted"),
                    schemas),)
