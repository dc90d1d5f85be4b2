"""Whether a new schema may join a topic's versions, under Pulsar's compatibility strategies.

BACKWARD: the new schema reads data written with the existing one(s); FORWARD: the existing
one(s) read data written with the new; FULL: both. Plain strategies compare with the latest
version, `_TRANSITIVE` ones with every version. ALWAYS_COMPATIBLE takes anything,
ALWAYS_INCOMPATIBLE refuses every change. A schema of another type than the existing one is
refused under every strategy but ALWAYS_COMPATIBLE; types without an Avro definition
(String, Int32...) carry nothing more to compare, so the same type is enough.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Sequence
from dataclasses import dataclass

from impl.broker.errors import IncompatibleSchema, InvalidSchema
from impl.broker.schemas import avro
from wire.pulsar_api_pb2 import Schema


class Strategy(enum.Enum):
    """Pulsar's `SchemaCompatibilityStrategy`; UNDEFINED: the namespace has not chosen."""

    UNDEFINED = "UNDEFINED"
    ALWAYS_INCOMPATIBLE = "ALWAYS_INCOMPATIBLE"
    ALWAYS_COMPATIBLE = "ALWAYS_COMPATIBLE"
    BACKWARD = "BACKWARD"
    FORWARD = "FORWARD"
    FULL = "FULL"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"

    @classmethod
    def named(cls, name: str) -> Strategy:
        try:
            return cls(name.upper())
        except ValueError:
            raise ValueError(f"unknown schema compatibility strategy {name!r}; expected one "
                             f"of {', '.join(s.value for s in cls)}") from None


BROKER_DEFAULT = Strategy.FULL
"""Pulsar's broker setting `schemaCompatibilityStrategy`, used while a namespace has none."""
_NEW_READS_OLD = {Strategy.BACKWARD, Strategy.FULL, Strategy.BACKWARD_TRANSITIVE,
                  Strategy.FULL_TRANSITIVE}
_OLD_READS_NEW = {Strategy.FORWARD, Strategy.FULL, Strategy.FORWARD_TRANSITIVE,
                  Strategy.FULL_TRANSITIVE}
_TRANSITIVE = {Strategy.BACKWARD_TRANSITIVE, Strategy.FORWARD_TRANSITIVE,
               Strategy.FULL_TRANSITIVE}
BYTES = Schema.NoSchema
"""The protocol's type of raw bytes (Pulsar's NONE): no schema at all."""
AVRO_DEFINED = frozenset({Schema.Avro, Schema.Json, Schema.Protobuf})
"""Types whose schema data is an Avro definition (the clients write JSON and Protobuf
schemas that way too), and so are checked field by field."""


@dataclass(frozen=True)
class SchemaData:
    """A schema as a client declares it: its type (`Schema.Type`), its definition, and
    its properties."""

    type: int
    data: bytes
    properties: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, schema: Schema) -> SchemaData:
        return cls(schema.type, schema.schema_data,
                   tuple(sorted((p.key, p.value) for p in schema.properties)))

    @classmethod
    def declared(cls, present: bool, schema: Schema) -> SchemaData | None:
        """The schema a PRODUCER, SUBSCRIBE or GET_OR_CREATE_SCHEMA declares; None for
        none, and for type None, which is how clients send raw bytes (BYTES)."""
        return cls.of(schema) if present and schema.type != BYTES else None

    def to_proto(self, name: str) -> Schema:
        schema = Schema(name=name, schema_data=self.data, type=Schema.Type.Name(self.type))
        for key, value in self.properties:
            schema.properties.add(key=key, value=value)
        return schema

    def same_as(self, other: SchemaData) -> bool:
        """The same schema (what makes a producer get an existing version): the same type
        and definition, Avro definitions compared as JSON, so layout does not count."""
        if self.type != other.type:
            return False
        if self.type in AVRO_DEFINED:
            try:
                return bool(json.loads(self.data) == json.loads(other.data))
            except ValueError:
                pass
        return self.data == other.data


def effective(strategy: Strategy) -> Strategy:
    return BROKER_DEFAULT if strategy is Strategy.UNDEFINED else strategy


def check(existing: Sequence[SchemaData], new: SchemaData, strategy: Strategy) -> None:
    """Raise `IncompatibleSchema` (`InvalidSchema` for a definition that does not parse)
    unless `new` may follow `existing` (oldest first) under `strategy`."""
    strategy = effective(strategy)
    if not existing or strategy is Strategy.ALWAYS_COMPATIBLE:
        return
    if strategy is Strategy.ALWAYS_INCOMPATIBLE:
        raise IncompatibleSchema("the compatibility strategy is ALWAYS_INCOMPATIBLE: "
                                 "the schema cannot change")
    against = list(existing) if strategy in _TRANSITIVE else [existing[-1]]
    for old in against:
        if old.type != new.type:
            raise IncompatibleSchema(f"incompatible schema: the existing schema's type is "
                                     f"{type_name(old.type)}, the new one's "
                                     f"{type_name(new.type)}")
    if new.type not in AVRO_DEFINED:
        return
    new_avro = _parsed(new)
    for old in reversed(against):
        if old.data == new.data:
            continue
        old_avro = _parsed(old)
        reason = None
        if strategy in _NEW_READS_OLD:
            reason = avro.unreadable(new_avro, old_avro)
        if reason is None and strategy in _OLD_READS_NEW:
            reason = avro.unreadable(old_avro, new_avro)
        if reason is not None:
            raise IncompatibleSchema(f"incompatible schema under {strategy.value}: {reason}")


def consumer_strategy(strategy: Strategy) -> Strategy:
    """What a consumer's schema is checked with: its reader must read what the latest
    version wrote (BACKWARD) under the non-transitive strategies and FORWARD_TRANSITIVE,
    as Pulsar's `checkConsumerCompatibility` does; the others apply as they are."""
    strategy = effective(strategy)
    if strategy in (Strategy.BACKWARD, Strategy.FORWARD, Strategy.FORWARD_TRANSITIVE,
                    Strategy.FULL):
        return Strategy.BACKWARD
    return strategy


def _parsed(schema: SchemaData) -> avro.AvroSchema:
    try:
        return avro.parse(schema.data)
    except avro.InvalidAvroSchema as exc:
        raise InvalidSchema(f"invalid schema definition: {exc}") from None


def type_name(schema_type: int) -> str:
    """Pulsar's `SchemaType` spelling (`AVRO`, `KEY_VALUE`, `BOOLEAN`...), the admin API's."""
    name = Schema.Type.Name(schema_type)
    special = {"Bool": "BOOLEAN", "NoSchema": "NONE", "KeyValuePair": "KEY_VALUE"}
    if name in special:
        return special[name]
    return "".join(f"_{c}" if c.isupper() and i else c
                   for i, c in enumerate(name)).upper()


def type_named(name: str) -> int:
    """The `Schema.Type` of a `SchemaType` name (BYTES is the protocol's None)."""
    wanted = "NONE" if name.upper() == "BYTES" else name.upper()
    for value in Schema.Type.values():
        if type_name(value) == wanted:
            return value
    raise ValueError(f"unknown schema type {name!r}")
