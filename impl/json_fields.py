"""Typed values of the JSON documents the admin API stores. Pulsar reads each into a Java
field of fixed type (int, long, boolean, String), so a value of another type, or beyond
the field's range, is refused before anything is stored; so it is here (ValueError, 400),
rather than stored for a broker to misread later: a TTL of 2^80 seconds, a service URL
that is a number."""

from __future__ import annotations

from typing import Any

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def whole(value: Any, what: str, low: int, high: int) -> int:
    """`value` as a whole number from `low` to `high` (a JSON `true` is not one)."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{what} must be a whole number from {low} to {high}, "
                         f"not {value!r:.40}")
    return value


def boolean(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{what} must be true or false, not {value!r:.40}")
    return value


def text(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string, not {value!r:.40}")
    return value


def url(value: Any, what: str, schemes: tuple[str, ...]) -> str:
    """A URL of one of `schemes` with a host (`http://host:8080`), or "" for none."""
    given = text(value, what)
    scheme, sep, rest = given.partition("://")
    if given and not (sep and scheme in schemes and rest.split("/", 1)[0]):
        raise ValueError(f"{what} must be a {' or '.join(schemes)} URL such as "
                         f"{schemes[0]}://host:port, not {given!r:.80}")
    return given
