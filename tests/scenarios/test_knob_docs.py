"""docs/scenarios.md documents every `[workload]` knob as it is declared: a row per knob
(some rows hold several), its type and range, its default, and the workloads that read it,
and no row for a knob nobody declares."""

from __future__ import annotations

import re
from pathlib import Path

from harness.workloads.knobs import KnobSpec, declared
from harness.workloads.registry import WORKLOADS, readers_of
from harness.workloads.settings import WorkloadSettings

PAGE = Path(__file__).resolve().parents[2] / "docs" / "scenarios.md"


def _rows() -> dict[str, tuple[str, str, str]]:
    """knob -> (type, default, meaning) as the format table's `[workload]` rows give them."""
    rows = {}
    for line in PAGE.read_text().splitlines():
        if not line.startswith("| `[workload]` "):
            continue
        keys, kind, default, meaning = (cell.strip() for cell in line.strip("|").split(" | "))
        names = re.findall(r"`([a-z_]+)`", keys.removeprefix("`[workload]`"))
        defaults = default.split(", ") if len(names) > 1 else [default]
        for name, value in zip(names, defaults, strict=True):
            rows[name] = (kind, value.split(" ")[0], meaning)
    return rows


def _type(spec: KnobSpec) -> str:
    rule = spec.rule
    if spec.kind is bool:
        return "boolean"
    if spec.kind is str:
        return ", ".join(f"`{choice}`" for choice in rule.choices)
    number = "integer" if spec.kind is int else "number"
    if rule.least is not None and rule.most is not None:
        return f"{number} from {rule.least:g} to {rule.most:g}"
    if rule.above is not None:
        return f"{number} > {rule.above:g}"
    return f"{number} ≥ {rule.least:g}"


def _default(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return f"`{value}`"
    if isinstance(value, tuple):
        return "`[]`" if not value else str(list(value))
    assert isinstance(value, int | float)
    return f"{value:g}"


def _declared() -> dict[str, KnobSpec]:
    return {spec.name: spec for kind in WORKLOADS.values()
            for spec in (*declared(WorkloadSettings), *declared(kind.knobs))}


def test_every_declared_knob_has_a_row_and_every_row_a_declared_knob() -> None:
    assert set(_rows()) == {"kind", *_declared()}


def test_each_row_gives_the_knob_s_type_default_and_readers() -> None:
    rows = _rows()
    common = {spec.name for spec in declared(WorkloadSettings)}
    for name, spec in _declared().items():
        kind, default, meaning = rows[name]
        if spec.kind is tuple:
            assert kind.startswith("list of"), name
        else:
            assert kind == _type(spec), name
        assert default == _default(spec.default), name
        if name not in common:
            for reader in readers_of(name):
                assert f"`{reader}`" in meaning, (name, reader)


def test_the_kind_row_names_every_workload() -> None:
    kind, default, _ = _rows()["kind"]
    assert set(re.findall(r"`([a-z]+)`", kind)) == set(WORKLOADS)
    assert default == f"`{WorkloadSettings.kind}`"
