"""The TOML reading both input formats share (history/toml_input.py): every problem names
the file, the line where the key stands (or the table around a missing one), the key, and
what was expected."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from history.errors import BadInput
from history.toml_input import TomlInput, key_lines

TEXT = '''\
name = "x"                     # 1
description = """             # 2
brokers = "not a key"
"""
urls = [                       # 5
  "pulsar://a:1",
]
[topology]                     # 8
brokers = 3
[[clusters]]                   # 10
name = "a"
[[clusters.nodes]]             # 12
name = "a-1"
[[clusters.nodes]]             # 14
name = "a-2"
labels = { app = "broker" }    # 16
[[clusters]]                   # 17
"quoted.key" = 1
[[clusters.nodes]]             # 19
name = "b-1"
'''


class Refused(BadInput):
    pass


@pytest.fixture
def toml(tmp_path: Path) -> TomlInput:
    path = tmp_path / "t.toml"
    path.write_text(TEXT)
    return TomlInput(path, Refused)


def test_each_key_has_its_line_and_arrays_of_tables_count_their_entries() -> None:
    lines = key_lines(TEXT)
    assert lines[("name",)] == 1
    assert lines[("description",)] == 2
    assert ("brokers",) not in lines  # inside a multi-line string
    assert lines[("topology", "brokers")] == 9
    assert lines[("clusters", 0, "nodes", 1, "name")] == 15
    assert lines[("clusters", 1)] == 17
    assert lines[("clusters", 1, "quoted.key")] == 18
    assert lines[("clusters", 1, "nodes", 0, "name")] == 20


@pytest.mark.parametrize(("key", "line"), [
    ("topology.brokers", 9),
    ("clusters[0].nodes[1].labels.app", 16),  # in an inline table: the table's line
    ("clusters[1].nodes[0].address", 19),     # missing: the table around it
    ("urls[0]", 5),
])
def test_an_error_names_the_line_of_its_key(toml: TomlInput, key: str, line: int) -> None:
    assert str(toml.error(key, "wrong")) == f"{toml.path}:{line}: {key}: wrong"


def test_a_key_the_file_does_not_show_has_no_line(toml: TomlInput) -> None:
    assert str(toml.expected("seed", "an integer", "x")) == (
        f"{toml.path}: seed: expected an integer, got 'x'")


def test_a_syntax_error_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('name = "x"\nbrokers = = 3\n')
    with pytest.raises(Refused) as refused:
        TomlInput(path, Refused)
    assert str(refused.value).startswith(f"{path}:2: not valid TOML: ")


@pytest.mark.parametrize(("check", "value", "expected"), [
    (lambda t, v: t.integer("k", v, minimum=1), True, "expected an integer, got True"),
    (lambda t, v: t.integer("k", v, minimum=1), 0, "expected a number of at least 1, got 0"),
    (lambda t, v: t.number("k", v), "1", "expected a number, got '1'"),
    (lambda t, v: t.number("k", v, above=True), 0, "expected a number above 0, got 0.0"),
    (lambda t, v: t.number("k", v), float("inf"), "expected a finite number, got inf"),
    (lambda t, v: t.string("k", v, non_empty=True), "", "expected a non-empty string, got ''"),
    (lambda t, v: t.boolean("k", v), 1, "expected true or false, got 1"),
    (lambda t, v: t.choice("k", v, ("a", "b")), "c", "expected one of a, b, got 'c'"),
    (lambda t, v: t.table("k", v, ("a",)), {"b": 1}, "k.b: unknown key; expected one of a"),
])
def test_each_check_says_what_was_expected(
        toml: TomlInput, check: Callable[[TomlInput, Any], object], value: object,
        expected: str) -> None:
    with pytest.raises(Refused) as refused:
        check(toml, value)
    assert str(refused.value).endswith(expected)
