"""The contract's Avro records are schemas a Java Avro parser accepts: Pulsar's schema
registry validates defaults as Avro's specification says, a union's default being a value
of its first branch, where the Python client and fastavro let any default through."""

from __future__ import annotations

from typing import Any

import pytest
from pulsar.schema import Record

from harness.workloads.contract.schemas import Reading, ReadingAsText, ReadingWithUnit

FIRST_BRANCH_VALUE: dict[str, type] = {"null": type(None), "string": str, "int": int}


def _default_fits(field: dict[str, Any]) -> bool:
    kind = field["type"]
    first = kind[0] if isinstance(kind, list) else kind
    return isinstance(field["default"], FIRST_BRANCH_VALUE[first])


@pytest.mark.parametrize("record", [Reading, ReadingWithUnit, ReadingAsText])
def test_every_default_is_a_value_of_its_first_branch(record: type[Record]) -> None:
    fields = [f for f in record.schema()["fields"] if "default" in f]
    assert all(_default_fits(f) for f in fields), fields


def test_the_compatible_record_adds_a_field_with_a_default() -> None:
    added = {f["name"]: f for f in ReadingWithUnit.schema()["fields"]}["unit"]
    assert added == {"name": "unit", "type": "string", "default": "none"}
