"""Workload knobs: the keys of a scenario's `[workload]` table, declared by what reads them.

A workload class declares its knobs in a nested frozen dataclass named `Knobs` (a subclass
of `Knobs` here), one field per knob, `name: type = knob(default, doc, ...)`: the type is
the annotation, the rule (a range or choices) and the one-line doc come from `knob`.
Knobs several workloads read are declared once, in a base their `Knobs` share
(harness/workloads/shared_knobs.py); those every workload reads are `WorkloadSettings`'s
own fields. From these declarations the scenario reader checks a table (scenarios/format.py)
and the workload reads its values, typed (`WorkloadSettings.knobs_as`), so a knob's type,
default and range are written in one place.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

T = TypeVar("T")

_RULE = "workload-knob"
"""The field metadata key under which `knob` keeps a knob's `Rule`."""


@dataclass(frozen=True)
class Rule:
    """What a knob's value may be beyond its type, and what it is for."""

    doc: str
    least: float | None = None
    most: float | None = None
    above: float | None = None
    """A bound the value must exceed (a time of 0 would mean never)."""
    choices: tuple[str, ...] = ()
    """The strings it may be (for a list of strings, each item)."""


def knob(default: T, doc: str, *, least: float | None = None, most: float | None = None,
         above: float | None = None, choices: tuple[str, ...] = ()) -> T:
    """A knob's field in a `Knobs` dataclass (or in `WorkloadSettings`)."""
    return field(default=default, metadata={_RULE: Rule(doc, least, most, above, choices)})


@dataclass(frozen=True)
class Knobs:
    """The base of every workload's `Knobs`: a workload with none declares an empty subclass."""

    def problem(self, common: Mapping[str, Any]) -> tuple[str, str] | None:
        """(knob, why) when values that are each valid make no sense together, among these
        knobs or with `common` (the values of the knobs every workload reads,
        `WorkloadSettings`); None when they do. Knobs that depend on others say how here,
        and ask their bases too."""
        return None


@dataclass(frozen=True)
class KnobSpec:
    """One declared knob, as the scenario reader and the documentation test see it."""

    name: str
    kind: type[Any]
    """`int`, `float`, `bool`, `str`, or `tuple` (a list of strings)."""
    default: Any
    rule: Rule

    def expected(self) -> str:
        """How a scenario's error names a value out of this knob's range."""
        rule = self.rule
        if rule.least is not None and rule.most is not None:
            return f"a number from {rule.least:g} to {rule.most:g}"
        if rule.above is not None:
            return f"a number above {rule.above:g}"
        return f"a number of at least {rule.least:g}"

    def in_range(self, value: float) -> bool:
        rule = self.rule
        return ((rule.least is None or value >= rule.least)
                and (rule.most is None or value <= rule.most)
                and (rule.above is None or value > rule.above))


_KINDS: dict[Any, type[Any]] = {int: int, float: float, bool: bool, str: str, tuple: tuple}


def declared(cls: type[Any]) -> tuple[KnobSpec, ...]:
    """The knobs dataclass `cls` declares with `knob`, in field order (its bases' first)."""
    hints = typing.get_type_hints(cls)
    specs = []
    for spec in dataclasses.fields(cls):
        if _RULE not in spec.metadata:
            continue
        hint = hints[spec.name]
        kind = _KINDS.get(typing.get_origin(hint) or hint)
        if kind is None or (kind is tuple and typing.get_args(hint) != (str, ...)):
            raise TypeError(f"{cls.__qualname__}.{spec.name}: a knob is an int, float, bool, "
                            f"str or tuple[str, ...], not {hint}")
        specs.append(KnobSpec(spec.name, kind, spec.default, spec.metadata[_RULE]))
    return tuple(specs)
