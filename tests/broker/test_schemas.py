"""What a schema user notices, with the official client: records round trip and decode at
once, a compatible evolution gets the next version and old messages still decode, an
incompatible schema is refused, and the raw requests GET_SCHEMA and GET_OR_CREATE_SCHEMA
answer as Pulsar's do. The `schema-compatibility-unchecked` mutant is proved here too."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator

import pulsar
import pytest
from pulsar.schema import AvroSchema, Integer, JsonSchema, Record, String, StringSchema

from impl.broker.schemas.compatibility import Strategy
from impl.mutants import Mutants
from impl.naming.topic_name import NamespaceName
from tests.broker.conftest import MemoryBroker, official_client, serving
from tests.cluster.raw_producer import RawConnection
from wire.frames import encode_command
from wire.pulsar_api_pb2 import (
    BaseCommand,
    CommandGetOrCreateSchema,
    CommandGetSchema,
    Schema,
    ServerError,
)

_numbers = itertools.count()


def user_record(**fields: object) -> type:
    """A record named `User` with these fields: Avro matches records by name, and the
    client names a record after its class."""
    return type("User", (Record,), dict(fields))


User = user_record(name=String(), age=Integer(required=True))
UserWithEmail = user_record(name=String(), age=Integer(required=True),
                            email=String(default="none", required_default=True))
"""`User` plus a field with a default: FULL-compatible with `User`."""
UserWithTextAge = user_record(name=String(), age=String(required=True))
"""`User` with another type for `age`: incompatible with it."""


@pytest.fixture(scope="module")
def broker() -> Iterator[MemoryBroker]:
    with serving() as broker:
        yield broker


@pytest.fixture(scope="module")
def client(broker: MemoryBroker) -> Iterator[pulsar.Client]:
    client = official_client(broker.url)
    yield client
    client.close()


@pytest.fixture
def topic() -> str:
    return f"persistent://public/default/schemas-{next(_numbers)}"


def received(client: pulsar.Client, topic: str, schema: pulsar.schema.Schema,
             count: int) -> list[pulsar.Message]:
    consumer = client.subscribe(topic, "reader", schema=schema,
                                initial_position=pulsar.InitialPosition.Earliest)
    messages = [consumer.receive(timeout_millis=5000) for _ in range(count)]
    consumer.close()
    return messages


def test_an_avro_record_round_trips_and_decodes_at_once(client: pulsar.Client,
                                                         topic: str) -> None:
    client.create_producer(topic, schema=AvroSchema(User)).send(User(name="ada", age=36))
    (message,) = received(client, topic, AvroSchema(User), 1)
    started = time.monotonic()
    value = message.value()  # asks the broker for the writer's schema (GET_SCHEMA)
    assert time.monotonic() - started < 2.0
    assert (value.name, value.age) == ("ada", 36)
    assert message._message.int_schema_version() == 0


def test_the_same_schema_again_gets_its_version(client: pulsar.Client, topic: str) -> None:
    for age in (1, 2):
        client.create_producer(topic, schema=JsonSchema(User)).send(User(name="x", age=age))
    messages = received(client, topic, JsonSchema(User), 2)
    assert [m._message.int_schema_version() for m in messages] == [0, 0]


def test_a_compatible_evolution_gets_the_next_version_and_old_messages_still_decode(
        client: pulsar.Client, topic: str) -> None:
    client.create_producer(topic, schema=AvroSchema(User)).send(User(name="old", age=1))
    client.create_producer(topic, schema=AvroSchema(UserWithEmail)).send(
        UserWithEmail(name="new", age=2, email="new@example.org"))
    messages = received(client, topic, AvroSchema(UserWithEmail), 2)
    assert [m._message.int_schema_version() for m in messages] == [0, 1]
    old, new = (m.value() for m in messages)
    assert (old.name, old.email) == ("old", "none")  # version 0 read, the default filled in
    assert (new.name, new.email) == ("new", "new@example.org")


def test_an_incompatible_schema_is_refused(client: pulsar.Client, topic: str) -> None:
    client.create_producer(topic, schema=AvroSchema(User))
    with pytest.raises(pulsar.IncompatibleSchema):
        client.create_producer(topic, schema=AvroSchema(UserWithTextAge))
    with pytest.raises(pulsar.IncompatibleSchema):
        client.create_producer(topic, schema=StringSchema())  # another type altogether
    with pytest.raises(pulsar.IncompatibleSchema):
        client.subscribe(topic, "text-age", schema=AvroSchema(UserWithTextAge))


def test_a_producer_without_a_schema_is_let_in_on_a_topic_with_one(
        client: pulsar.Client, topic: str) -> None:
    client.create_producer(topic, schema=StringSchema())
    client.create_producer(topic).send(b"raw bytes")


def test_a_consumer_schema_is_refused_on_a_topic_with_data_but_no_schema(
        client: pulsar.Client, topic: str) -> None:
    client.create_producer(topic).send(b"raw bytes")
    with pytest.raises(pulsar.IncompatibleSchema):
        client.subscribe(topic, "typed", schema=StringSchema())


def test_a_consumer_schema_on_an_idle_topic_is_registered(client: pulsar.Client,
                                                          topic: str) -> None:
    client.subscribe(topic, "first", schema=AvroSchema(User)).close()
    with pytest.raises(pulsar.IncompatibleSchema):
        client.create_producer(topic, schema=AvroSchema(UserWithTextAge))


def test_the_namespace_strategy_decides(broker: MemoryBroker, client: pulsar.Client) -> None:
    namespace = NamespaceName("public", "default")
    broker.schemas.strategies[namespace] = Strategy.ALWAYS_INCOMPATIBLE
    try:
        topic = f"persistent://public/default/schemas-strategy-{next(_numbers)}"
        client.create_producer(topic, schema=AvroSchema(User))
        client.create_producer(topic, schema=AvroSchema(User))  # the same schema: fine
        with pytest.raises(pulsar.IncompatibleSchema):
            client.create_producer(topic, schema=AvroSchema(UserWithEmail))
    finally:
        del broker.schemas.strategies[namespace]


def test_get_schema_answers_a_version_or_topic_not_found(client: pulsar.Client,
                                                         broker: MemoryBroker,
                                                         topic: str) -> None:
    client.create_producer(topic, schema=AvroSchema(User))
    info = client._client.get_schema_info(topic, 0)
    assert info.schema_type() == pulsar.schema.AvroSchema(User).schema_info().schema_type()
    assert '"age"' in info.schema()

    connection = RawConnection(broker.url)
    for version in (None, (7).to_bytes(8, "big")):
        request = CommandGetSchema(request_id=5, topic=topic + "-none")
        if version is not None:
            request = CommandGetSchema(request_id=5, topic=topic, schema_version=version)
        connection.send_bytes(encode_command(BaseCommand(type=BaseCommand.GET_SCHEMA,
                                                         getSchema=request)))
        (answer,) = connection.collect(0.5)
        assert answer.type == BaseCommand.GET_SCHEMA_RESPONSE
        assert answer.getSchemaResponse.error_code == ServerError.TopicNotFound


def get_or_create(broker: MemoryBroker, topic: str, schema: Schema) -> BaseCommand:
    connection = RawConnection(broker.url)
    connection.send_bytes(encode_command(BaseCommand(
        type=BaseCommand.GET_OR_CREATE_SCHEMA,
        getOrCreateSchema=CommandGetOrCreateSchema(request_id=9, topic=topic, schema=schema))))
    (answer,) = connection.collect(0.5)
    assert answer.type == BaseCommand.GET_OR_CREATE_SCHEMA_RESPONSE
    return answer


def test_get_or_create_schema_registers_and_checks(client: pulsar.Client, broker: MemoryBroker,
                                                   topic: str) -> None:
    user = AvroSchema(User).schema_info().schema().encode()
    created = get_or_create(broker, topic, Schema(name="u", type=Schema.Avro, schema_data=user))
    assert created.getOrCreateSchemaResponse.schema_version == (0).to_bytes(8, "big")
    again = get_or_create(broker, topic, Schema(name="u", type=Schema.Avro, schema_data=user))
    assert again.getOrCreateSchemaResponse.schema_version == (0).to_bytes(8, "big")
    refused = get_or_create(broker, topic, Schema(name="s", type=Schema.String, schema_data=b""))
    assert refused.getOrCreateSchemaResponse.error_code == ServerError.IncompatibleSchema
    # the version registered is the one producers of that schema get
    client.create_producer(topic, schema=AvroSchema(User)).send(User(name="y", age=3))
    (message,) = received(client, topic, AvroSchema(User), 1)
    assert message._message.int_schema_version() == 0


def test_mutant_schema_compatibility_unchecked_lets_an_incompatible_producer_in() -> None:
    with serving(mutants=Mutants.of(["schema-compatibility-unchecked"])) as broker:
        client = official_client(broker.url)
        try:
            topic = "persistent://public/default/schemas-mutant"
            client.create_producer(topic, schema=AvroSchema(User))
            client.create_producer(topic, schema=AvroSchema(UserWithTextAge))  # no refusal
        finally:
            client.close()
