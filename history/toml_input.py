"""Reading a TOML input (a scenario, a target file): the file read and parsed, and its
values checked, with one style for every problem, raised as the caller's own BadInput type:

    <file>:<line>: <key>: expected <what>, got <value>

one line, where `<key>` is written as a user looks for it (`topology.brokers`,
`clusters[0].nodes[1].name`) and `<line>` is where tomllib found a syntax error, or where
the key stands in the file (else the nearest table around it, for a key that is missing);
it is left out where the file shows none (a top-level key that is missing). A problem
other than a value of the wrong kind says what it is in place of `expected ...`.

Both readers keep their schema (the keys, what each holds) and take every check from
here, so a value of one kind is refused in the same words in either file.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any, TypeVar, cast

from history.errors import BadInput

T = TypeVar("T")

KeyPath = tuple[str | int, ...]
"""A key as a path into the parsed file: table names, and indexes into arrays of tables."""

_PART = r"""(?:[A-Za-z0-9_-]+|"[^"\\]*"|'[^']*')"""
_DOTTED = rf"{_PART}(?:\s*\.\s*{_PART})*"
_HEADER = re.compile(rf"\s*(\[\[?)\s*({_DOTTED})\s*\]\]?\s*(?:#.*)?$")
_ASSIGNMENT = re.compile(rf"\s*({_DOTTED})\s*=(.*)$")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'')
_DECODE_AT = re.compile(r"^(.*) \(at line (\d+), column (\d+)\)$")


class TomlInput:
    """One TOML file, read and parsed (`data`); its checks raise the caller's `error`
    type naming file, line and key."""

    def __init__(self, path: Path, error: type[BadInput]) -> None:
        self.path = path
        self._error = error
        try:
            text = path.read_text()
        except OSError as exc:
            raise error(f"{path}: cannot read: {exc.strerror}") from None
        except UnicodeDecodeError as exc:
            raise error(f"{path}: not valid TOML: {exc}") from None
        try:
            self.data: dict[str, Any] = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            at = _DECODE_AT.match(str(exc))
            if at is None:
                raise error(f"{path}: not valid TOML: {exc}") from None
            raise error(f"{path}:{at[2]}: not valid TOML: {at[1]} (column {at[3]})") from None
        self._lines = key_lines(text)

    # --- errors ------------------------------------------------------------------------

    def error(self, key: str, problem: str) -> BadInput:
        line = self.line_of(key)
        return self._error(f"{self.path}{'' if line is None else f':{line}'}: {key}: "
                           f"{problem}")

    def expected(self, key: str, what: str, got: Any) -> BadInput:
        return self.error(key, f"expected {what}, got {got!r}")

    def line_of(self, key: str) -> int | None:
        """The line `key` stands on, else that of the nearest table around it."""
        path = key_path(key)
        for end in range(len(path), 0, -1):
            line = self._lines.get(path[:end])
            if line is not None:
                return line
        return None

    # --- tables and keys ---------------------------------------------------------------

    def table(self, key: str, value: Any, known: Collection[str]) -> dict[str, Any]:
        """`value` as a table that has no key but the `known` ones (`key` "": the file)."""
        if not isinstance(value, dict):
            raise self.expected(key, "a table", value)
        for name in value:
            if name not in known:
                raise self.error(f"{key}.{name}" if key else name,
                                 f"unknown key; expected one of {', '.join(sorted(known))}")
        return value

    def optional(self, table: dict[str, Any], key: str, prefix: str,
                 read: Callable[[str, Any], T], default: T) -> T:
        """`table[key]` through `read`, or `default` where it is not given; `prefix`
        names the table in errors."""
        return read(_join(prefix, key), table[key]) if key in table else default

    def required(self, table: dict[str, Any], key: str, prefix: str,
                 read: Callable[[str, Any], T]) -> T:
        if key not in table:
            raise self.error(_join(prefix, key), "missing")
        return read(_join(prefix, key), table[key])

    # --- values ------------------------------------------------------------------------

    def string(self, key: str, value: Any, *, non_empty: bool = False) -> str:
        if not isinstance(value, str) or (non_empty and not value):
            raise self.expected(key, "a non-empty string" if non_empty else "a string", value)
        return value

    def integer(self, key: str, value: Any, *, minimum: int = 0, maximum: int | None = None,
                why: str = "") -> int:
        """An integer of at least `minimum` and, when given, at most `maximum`; `why` says
        where the maximum comes from, after the range."""
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.expected(key, "an integer", value)
        if maximum is not None and not minimum <= value <= maximum:
            raise self.expected(key, f"a number from {minimum} to {maximum}{why}", value)
        if value < minimum:
            raise self.expected(key, f"a number of at least {minimum}", value)
        return value

    def number(self, key: str, value: Any, *, minimum: float = 0, above: bool = False
               ) -> float:
        """A finite number of at least `minimum` (`above`: more than it), as a float."""
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise self.expected(key, f"a number above {minimum:g}" if above else "a number",
                                value)
        number = float(value)
        if not math.isfinite(number):
            raise self.expected(key, "a finite number", number)
        if number < minimum or (above and number == minimum):
            raise self.expected(key, f"a number above {minimum:g}" if above
                                else f"a number of at least {minimum:g}", number)
        return number

    def boolean(self, key: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise self.expected(key, "true or false", value)
        return value

    def choice(self, key: str, value: Any, choices: Collection[T]) -> T:
        if value not in choices:
            raise self.expected(key, f"one of {', '.join(map(str, choices))}", value)
        return cast(T, value)

    def items(self, key: str, value: Any, read: Callable[[str, Any], T], *,
              non_empty: bool = False, what: str = "a list") -> tuple[T, ...]:
        """A list, each item through `read` as `key[n]`; `what` names it in errors."""
        if not isinstance(value, list) or (non_empty and not value):
            raise self.expected(key, what, value)
        return tuple(read(f"{key}[{n}]", item) for n, item in enumerate(value))


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def key_path(key: str) -> KeyPath:
    """`clusters[0].nodes[1].name` -> ("clusters", 0, "nodes", 1, "name")."""
    return tuple(int(index) if index else name
                 for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", key))


def _parts(dotted: str) -> tuple[str, ...]:
    return tuple(part.strip("\"'") for part in re.findall(_PART, dotted))


def key_lines(text: str) -> dict[KeyPath, int]:
    """Where each table header and key of a TOML text stands (lines from 1): enough for
    errors, not a parser. An array of tables' entries are counted, so `clusters[1]` is the
    second `[[clusters]]`; lines inside multi-line strings and arrays are passed over."""
    lines: dict[KeyPath, int] = {}
    arrays: dict[KeyPath, int] = {}
    table: KeyPath = ()
    closing: str | None = None  # the delimiter of a multi-line string we are in
    depth = 0  # brackets and braces a multi-line value left open

    def resolve(names: tuple[str, ...]) -> KeyPath:
        path: KeyPath = ()
        for name in names:
            path = (*path, name)
            if path in arrays:
                path = (*path, arrays[path] - 1)
        return path

    for number, line in enumerate(text.splitlines(), start=1):
        if closing is not None:
            if line.count(closing) % 2:
                closing = None
            continue
        if depth > 0:
            depth += _open_brackets(line)
            continue
        header = _HEADER.match(line)
        if header:
            names = _parts(header[2])
            if header[1] == "[[":
                array = (*resolve(names[:-1]), names[-1])
                arrays[array] = arrays.get(array, 0) + 1
                table = (*array, arrays[array] - 1)
            else:
                table = resolve(names)
            lines.setdefault(table, number)
            continue
        assignment = _ASSIGNMENT.match(line)
        if assignment is None:
            continue
        names = _parts(assignment[1])
        for end in range(1, len(names) + 1):
            lines.setdefault(table + names[:end], number)
        value = assignment[2]
        closing = next((d for d in ('"""', "'''") if value.count(d) % 2), None)
        if closing is None:
            depth = _open_brackets(value)
    return lines


def _open_brackets(value: str) -> int:
    """How many brackets and braces `value` opens and leaves open (strings and comments
    aside)."""
    code = _STRING.sub("", value).split("#", 1)[0]
    return code.count("[") + code.count("{") - code.count("]") - code.count("}")
