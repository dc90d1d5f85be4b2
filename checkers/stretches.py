"""Maximal stretches of consecutive readings: the shape of the rules that judge a state
that lasted too long (`stalled-subscription`, `zombie-broker`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

Reading = TypeVar("Reading")


def maximal_stretches(readings: Iterable[Reading], opens: Callable[[Reading], bool],
                      continues: Callable[[Reading, Reading], bool]
                      ) -> list[tuple[Reading, Reading]]:
    """The first and last reading of each maximal stretch of `readings` (in their order):
    a stretch opens at a reading `opens` accepts and goes on while `continues(first,
    reading)` holds; the reading that breaks it may open the next."""
    stretches: list[tuple[Reading, Reading]] = []
    first: Reading | None = None
    last: Reading | None = None
    for reading in readings:
        if first is not None and continues(first, reading):
            last = reading
            continue
        if first is not None and last is not None:
            stretches.append((first, last))
        first = last = reading if opens(reading) else None
    if first is not None and last is not None:
        stretches.append((first, last))
    return stretches
