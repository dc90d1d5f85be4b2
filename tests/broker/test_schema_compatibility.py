"""The compatibility strategies on the common evolutions of an Avro record: which way data
stays readable decides, as Avro's schema resolution says."""

from __future__ import annotations

import json
from typing import Any

import pytest

from impl.broker.errors import IncompatibleSchema, InvalidSchema
from impl.broker.schemas.compatibility import SchemaData, Strategy, check, type_name, type_named
from wire.pulsar_api_pb2 import Schema

S = Strategy


def record(*fields: dict[str, Any], name: str = "User") -> SchemaData:
    return SchemaData(Schema.Avro, json.dumps(
        {"type": "record", "name": name, "fields": list(fields)}).encode())


NAME = {"name": "name", "type": "string"}
AGE_INT = {"name": "age", "type": "int"}
AGE_LONG = {"name": "age", "type": "long"}
AGE_TEXT = {"name": "age", "type": "string"}
EMAIL = {"name": "email", "type": ["null", "string"]}
EMAIL_DEFAULT = {**EMAIL, "default": None}

BASE = record(NAME, AGE_INT)
# (change, the strategies that accept it, those that refuse it)
EVOLUTIONS = [
    ("add a field with a default", record(NAME, AGE_INT, EMAIL_DEFAULT),
     [S.BACKWARD, S.FORWARD, S.FULL], []),
    ("add a field without a default", record(NAME, AGE_INT, EMAIL),
     [S.FORWARD], [S.BACKWARD, S.FULL]),
    ("remove a field without a default", record(NAME),
     [S.BACKWARD], [S.FORWARD, S.FULL]),
    ("widen int to long", record(NAME, AGE_LONG), [S.BACKWARD], [S.FORWARD, S.FULL]),
    ("change a field's type", record(NAME, AGE_TEXT), [S.ALWAYS_COMPATIBLE],
     [S.BACKWARD, S.FORWARD, S.FULL]),
    ("rename the record", record(NAME, AGE_INT, name="Person"), [],
     [S.BACKWARD, S.FORWARD, S.FULL]),
    ("any change at all", record(NAME, AGE_INT, EMAIL_DEFAULT), [S.ALWAYS_COMPATIBLE],
     [S.ALWAYS_INCOMPATIBLE]),
]


@pytest.mark.parametrize(("new", "accepting", "refusing"),
                         [case[1:] for case in EVOLUTIONS], ids=[c[0] for c in EVOLUTIONS])
def test_an_evolution_is_judged_by_the_direction_data_must_be_read(
        new: SchemaData, accepting: list[Strategy], refusing: list[Strategy]) -> None:
    for strategy in accepting:
        check([BASE], new, strategy)
    for strategy in refusing:
        with pytest.raises(IncompatibleSchema):
            check([BASE], new, strategy)


def test_transitive_strategies_compare_with_every_version() -> None:
    # v0 → v1 adds email with a default, v2 then drops the default: v2 reads v1's data
    # (it has email) but not v0's.
    v1 = record(NAME, AGE_INT, EMAIL_DEFAULT)
    v2 = record(NAME, AGE_INT, EMAIL)
    check([BASE, v1], v2, S.BACKWARD)
    with pytest.raises(IncompatibleSchema, match="email"):
        check([BASE, v1], v2, S.BACKWARD_TRANSITIVE)


def test_nested_records_unions_and_named_references_are_followed() -> None:
    address = {"type": "record", "name": "Address", "fields": [{"name": "city",
                                                                  "type": "string"}]}
    old = record(NAME, {"name": "home", "type": address},
                 {"name": "work", "type": ["null", "Address"]})
    wider = {**address, "fields": [*address["fields"],
                                   {"name": "zip", "type": "string", "default": ""}]}
    check([old], record(NAME, {"name": "home", "type": wider},
                        {"name": "work", "type": ["null", "Address"]}), S.FULL)
    with pytest.raises(IncompatibleSchema, match=r"home\.zip"):
        check([old], record(NAME, {"name": "home", "type": {**wider, "fields": [
            *address["fields"], {"name": "zip", "type": "string"}]}},
            {"name": "work", "type": ["null", "Address"]}), S.BACKWARD)


def test_other_types_are_compatible_only_with_their_own_type() -> None:
    text = SchemaData(Schema.String, b"")
    check([text], SchemaData(Schema.String, b""), S.FULL)
    with pytest.raises(IncompatibleSchema, match="STRING"):
        check([text], SchemaData(Schema.Int32, b""), S.FULL)
    check([text], SchemaData(Schema.Int32, b""), S.ALWAYS_COMPATIBLE)


def test_a_definition_that_does_not_parse_is_invalid() -> None:
    with pytest.raises(InvalidSchema):
        check([BASE], SchemaData(Schema.Avro, b"{not json"), S.FULL)
    with pytest.raises(InvalidSchema, match="unknown type name"):
        check([BASE], record({"name": "x", "type": "Nowhere"}), S.FULL)


def test_type_names_are_pulsars() -> None:
    assert [type_name(t) for t in (Schema.Avro, Schema.Bool, Schema.KeyValuePair,
                                   Schema.LocalDateTime, Schema.NoSchema)] == [
        "AVRO", "BOOLEAN", "KEY_VALUE", "LOCAL_DATE_TIME", "NONE"]
    assert type_named("json") == Schema.Json and type_named("BYTES") == Schema.NoSchema
