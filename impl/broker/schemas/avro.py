"""Avro schema resolution on a schema's JSON text: can data written with one schema be read
with another? Pulsar's Avro, JSON and Protobuf schemas all carry an Avro definition, and
every compatibility strategy (compatibility.py) is a combination of this one question.

The rules are the Avro specification's "Schema Resolution", as Avro's own compatibility
checker (which Pulsar calls) applies them: a reader's record field missing from the writer
needs a default, a writer's field the reader lacks is skipped, numbers promote int → long →
float → double, strings and bytes read each other, a writer's union is readable when each
of its branches is, a reader's union when one branch reads the writer. Named types are
matched by their unqualified name or the reader's aliases.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes",
                        "string"})
PROMOTIONS: dict[str, frozenset[str]] = {
    "int": frozenset({"long", "float", "double"}),
    "long": frozenset({"float", "double"}),
    "float": frozenset({"double"}),
    "string": frozenset({"bytes"}),
    "bytes": frozenset({"string"}),
}
"""Writer type → the reader types that also read it."""
NAMED = frozenset({"record", "error", "enum", "fixed"})
COMPLEX = NAMED | {"array", "map"}


class InvalidAvroSchema(ValueError):
    """Text that is not an Avro schema definition."""


@dataclass(frozen=True)
class AvroSchema:
    root: Any
    named: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Named types (records, enums, fixed) by full and by unqualified name: how a field
    that names an earlier type is followed."""

    def definition(self, node: Any) -> Any:
        """`node` with named references followed and `{"type": "int"}` reduced to `"int"`."""
        while True:
            if isinstance(node, str):
                if node in PRIMITIVES:
                    return node
                found = self.named.get(node) or self.named.get(node.rpartition(".")[2])
                if found is None:
                    raise InvalidAvroSchema(f"unknown type name {node!r}")
                return found
            if isinstance(node, dict) and node.get("type") not in COMPLEX:
                node = node.get("type")
                continue
            return node


def parse(text: str | bytes) -> AvroSchema:
    try:
        root = json.loads(text)
    except ValueError as exc:
        raise InvalidAvroSchema(f"not JSON: {exc}") from None
    named: dict[str, dict[str, Any]] = {}
    _collect(root, named)
    schema = AvroSchema(root, named)
    _check_shape(schema, root, set())
    return schema


def _collect(node: Any, named: dict[str, dict[str, Any]]) -> None:
    if isinstance(node, list):
        for branch in node:
            _collect(branch, named)
    elif isinstance(node, dict):
        if node.get("type") in NAMED:
            name = node.get("name")
            if not isinstance(name, str) or not name:
                raise InvalidAvroSchema(f"a {node.get('type')} without a name")
            namespace = node.get("namespace")
            named[name] = node
            named[name.rpartition(".")[2]] = node
            if namespace and "." not in name:
                named[f"{namespace}.{name}"] = node
        for child in (node.get("type"), node.get("items"), node.get("values")):
            if isinstance(child, (dict, list)):
                _collect(child, named)
        for member in node.get("fields") or ():
            if isinstance(member, dict):
                _collect(member.get("type"), named)


def _check_shape(schema: AvroSchema, node: Any, seen: set[int]) -> None:
    """Refuse what no Avro parser would read: unknown names, records without field lists."""
    node = schema.definition(node)
    if isinstance(node, list):
        for branch in node:
            _check_shape(schema, branch, seen)
        return
    if isinstance(node, str) or id(node) in seen:
        return
    if not isinstance(node, dict):
        raise InvalidAvroSchema(f"{node!r} is not a schema")
    seen.add(id(node))
    kind = node["type"]
    if kind in ("record", "error"):
        members = node.get("fields")
        if not isinstance(members, list) or not all(
                isinstance(m, dict) and isinstance(m.get("name"), str) and "type" in m
                for m in members):
            raise InvalidAvroSchema(f"record {node['name']!r} needs a list of named fields")
        for member in members:
            _check_shape(schema, member["type"], seen)
    elif kind == "array":
        _check_shape(schema, node.get("items"), seen)
    elif kind == "map":
        _check_shape(schema, node.get("values"), seen)
    elif kind == "enum" and not isinstance(node.get("symbols"), list):
        raise InvalidAvroSchema(f"enum {node['name']!r} needs a list of symbols")


def unreadable(reader: AvroSchema, writer: AvroSchema) -> str | None:
    """Why data written with `writer` cannot be read with `reader`; None when it can."""
    return _Resolution(reader, writer).check(reader.root, writer.root, "")


def _kind(node: Any) -> str:
    if isinstance(node, list):
        return "union"
    return node if isinstance(node, str) else str(node["type"])


def _unqualified(node: dict[str, Any]) -> str:
    return str(node["name"]).rpartition(".")[2]


class _Resolution:
    def __init__(self, reader: AvroSchema, writer: AvroSchema) -> None:
        self._reader = reader
        self._writer = writer
        self._assumed: set[tuple[int, int]] = set()
        """Record pairs under check: a recursive type is assumed readable inside itself."""

    def check(self, reader_node: Any, writer_node: Any, where: str) -> str | None:
        reader = self._reader.definition(reader_node)
        writer = self._writer.definition(writer_node)
        at = where or "the schema"
        if isinstance(writer, list):
            return next((reason for branch in writer
                         if (reason := self.check(reader, branch, where)) is not None), None)
        if isinstance(reader, list):
            if any(self.check(branch, writer, where) is None for branch in reader):
                return None
            return f"{at}: no branch of the reader's union reads the writer's {_kind(writer)}"
        reader_kind, writer_kind = _kind(reader), _kind(writer)
        if reader_kind in PRIMITIVES or writer_kind in PRIMITIVES:
            if reader_kind == writer_kind or reader_kind in PROMOTIONS.get(writer_kind, ()):
                return None
            return f"{at}: a {writer_kind} cannot be read as a {reader_kind}"
        if reader_kind != writer_kind and {reader_kind, writer_kind} != {"record", "error"}:
            return f"{at}: a {writer_kind} cannot be read as a {reader_kind}"
        if reader_kind == "array":
            return self.check(reader.get("items"), writer.get("items"), f"{where}[]")
        if reader_kind == "map":
            return self.check(reader.get("values"), writer.get("values"), f"{where}{{}}")
        if _unqualified(writer) != _unqualified(reader) and _unqualified(writer) not in {
                str(alias).rpartition(".")[2] for alias in reader.get("aliases") or ()}:
            return f"{at}: {writer_kind} {writer['name']!r} is not {reader['name']!r}"
        if reader_kind == "fixed" and reader.get("size") != writer.get("size"):
            return f"{at}: fixed {reader['name']!r} changed its size"
        if reader_kind == "enum":
            missing = set(writer["symbols"]) - set(reader["symbols"])
            if missing and "default" not in reader:
                return f"{at}: enum {reader['name']!r} lacks symbols {sorted(missing)}"
            return None
        return self._records(reader, writer, where)

    def _records(self, reader: dict[str, Any], writer: dict[str, Any],
                 where: str) -> str | None:
        pair = (id(reader), id(writer))
        if pair in self._assumed:
            return None
        self._assumed.add(pair)
        written = {member["name"]: member for member in writer["fields"]}
        for member in reader["fields"]:
            name = member["name"]
            path = f"{where}.{name}" if where else name
            source = written.get(name) or next(
                (written[alias] for alias in member.get("aliases") or () if alias in written),
                None)
            if source is None:
                if "default" not in member:
                    return (f"{path}: the reader's field has no default and the writer's "
                            f"record {writer['name']!r} has no such field")
                continue
            if (reason := self.check(member["type"], source["type"], path)) is not None:
                return reason
        return None
