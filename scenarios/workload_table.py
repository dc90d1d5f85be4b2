"""A scenario's `[workload]` table, read against the workload registry.

`kind` names a workload (harness/workloads/registry.py); every other key is a knob,
checked against its declaration (harness/workloads/knobs.py): those of `WorkloadSettings`,
which every workload reads, and those the kind's class declares. A knob that only other
workloads declare is refused unless it holds its default: the workload would ignore it,
and the run would not be the one the file describes. At its default it passes, so a file
that writes every knob out (a run directory's `scenario.toml` from before knobs were
declared per workload) still reads.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.workloads.knobs import KnobSpec, declared
from harness.workloads.registry import WORKLOADS, readers_of
from harness.workloads.settings import WorkloadSettings
from history.errors import BadInput

Check = Callable[..., Any]
"""The scenario reader's type check: `check(key, value, kind, minimum=...)` -> the value."""
Error = Callable[[str, str], BadInput]
"""The scenario reader's error for a key: `error(key, problem)`."""


def read_workload(table: Any, check: Check, error: Error) -> WorkloadSettings:
    """The `[workload]` table `table` (`{}` when the scenario has none) as settings."""
    if not isinstance(table, dict):
        raise error("workload", f"expected a table, got {table!r}")
    kind_name: str = (check("workload.kind", table["kind"], tuple(WORKLOADS)) if "kind" in table
                      else WorkloadSettings.kind)
    kind = WORKLOADS[kind_name]
    common, own = declared(WorkloadSettings), declared(kind.knobs)
    anyone = {spec.name: spec for other in WORKLOADS.values() for spec in declared(other.knobs)}
    known = {"kind", *(spec.name for spec in common), *anyone}
    for key in table:
        if key not in known:
            raise error(f"workload.{key}",
                        f"unknown key; expected one of {', '.join(sorted(known))}")
    values = {spec.name: _knob(spec, table[spec.name], check, error)
              for spec in (*common, *own) if spec.name in table}
    for key in table:
        if key != "kind" and key not in values:
            spec = anyone[key]
            if _knob(spec, table[key], check, error) != spec.default:
                raise error(f"workload.{key}", f"only {_the_workloads(readers_of(key))} it, "
                                               f"not the {kind_name} workload")
    knobs = kind.knobs(**{spec.name: values.pop(spec.name) for spec in own
                          if spec.name in values})
    problem = knobs.problem({spec.name: values.get(spec.name, spec.default) for spec in common})
    if problem:
        raise error(f"workload.{problem[0]}", problem[1])
    return WorkloadSettings(kind=kind_name, knobs=knobs, **values)


def _knob(spec: KnobSpec, value: Any, check: Check, error: Error) -> Any:
    """`value` as knob `spec` takes it: its type (and choices), then its range."""
    key, rule = f"workload.{spec.name}", spec.rule
    if spec.kind is tuple:
        return check(key, value, (tuple, rule.choices or str))
    if spec.kind is str:
        return check(key, value, rule.choices or str)
    least = next((bound for bound in (rule.least, rule.above) if bound is not None), 0)
    value = check(key, value, spec.kind, minimum=least)
    if spec.kind is not bool and not spec.in_range(value):
        raise error(key, f"expected {spec.expected()}, got {value!r}")
    return value


def _the_workloads(kinds: tuple[str, ...]) -> str:
    """`the topic workload takes`, `the topic, geo and migration workloads take`."""
    if len(kinds) == 1:
        return f"the {kinds[0]} workload takes"
    return f"the {', '.join(kinds[:-1])} and {kinds[-1]} workloads take"
