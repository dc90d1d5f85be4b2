"""Scenario files: what a run starts, drives, breaks and expects, validated on load.

A scenario is TOML (docs/scenarios.md). Loading checks every key against this module's
schema and stops at the first problem with one line naming the file, the key and what was
expected, so a typo never becomes a silently different run.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Collection
from dataclasses import MISSING, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from harness.backends import BACKENDS
from harness.targets.reference_mutants import reference_mutants
from harness.topology import (
    AUTH_MODES,
    MAX_CLUSTERS,
    MAX_NODES,
    MAX_PER_CLUSTER,
    Topology,
)
from harness.workloads.registry import cluster_count_problem
from harness.workloads.settings import WorkloadSettings
from history.checker_registry import CHECKER_NAMES
from history.errors import BadInput
from history.toml_input import TomlInput
from nemesis.faults import FAULT_NAMES
from nemesis.schedule import AIM_CLUSTERS, AIMS, SCHEDULES, NemesisSettings, TimedFault
from scenarios.workload_table import read_workload

SESSION_POLICIES = ("shutdown", "reconnect")
EXPECTED = ("valid", "invalid", "unknown")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
"""A scenario's name is a directory of the runs directory: one plain path component."""


class ScenarioError(BadInput):
    """A scenario file that does not follow the format."""


@dataclass(frozen=True)
class Checkers:
    duplicate_window_bound_ms: int = 2000
    unavailable_bound_ms: int | None = None
    """`unavailable` judges the run only when set."""
    zombie_broker_bound_ms: int | None = None
    """When set, the harness probes the brokers' health during the load and
    `zombie-broker` judges the run."""
    stalled_subscription_bound_ms: int | None = None
    """How long a subscription may wait with idle consumers and a backlog; unset, the
    checker's default (10 s)."""


@dataclass(frozen=True)
class Scenario:
    name: str
    path: Path
    duration_s: float = 30.0
    seed: int | None = None
    description: str = ""
    topology: Topology = field(default_factory=Topology)
    workload: WorkloadSettings = field(default_factory=WorkloadSettings)
    nemesis: NemesisSettings = field(default_factory=NemesisSettings)
    checkers: Checkers = field(default_factory=Checkers)
    mutants: tuple[str, ...] = ()
    expected: str = "valid"
    expected_anomalies: tuple[str, ...] = ()
    """Checkers that must each find something for an `invalid` run to count as the catch
    the scenario is about (a mutant's named anomaly), not just any anomaly."""

    @property
    def faults_s(self) -> float:
        """The seconds of the load in which faults come: all of it but a quiet end."""
        return self.duration_s - self.nemesis.quiet_end_s


def load_scenario(path: Path) -> Scenario:
    """Read and validate a scenario; raises `ScenarioError` naming file, line, key and
    expectation (history/toml_input.py)."""
    reader = _Reader(TomlInput(path, ScenarioError))
    data = reader.toml.data
    scenario = Scenario(
        name=_name(reader, data, path),
        path=path,
        duration_s=reader.take(data, "duration_s", float, default=30.0, minimum=1),
        seed=reader.take(data, "seed", int, default=None),
        description=reader.take(data, "description", str, default=""),
        topology=reader.table(data, "topology", Topology, {
            "clusters": (tuple, str), "backend": tuple(BACKENDS),
            "session_expired_policy": SESSION_POLICIES, "auth": AUTH_MODES}),
        workload=read_workload(data.get("workload", {}), reader.check, reader.toml.error),
        nemesis=_nemesis(reader, data),
        checkers=reader.table(data, "checkers", Checkers, {
            "unavailable_bound_ms": int, "zombie_broker_bound_ms": int,
            "stalled_subscription_bound_ms": int}),
        mutants=_mutants(reader, data),
        expected=reader.take(data, "expected", EXPECTED, default="valid"),
        expected_anomalies=_expected_anomalies(reader, data),
    )
    reader.no_extra(data, {"name", "duration_s", "seed", "description", "topology",
                               "workload", "nemesis", "checkers", "mutants", "expected",
                               "expected_anomalies"})
    toml = reader.toml
    _topology_size(toml, scenario.topology)
    problem = cluster_count_problem(scenario.workload.kind, len(scenario.topology.clusters))
    if problem:
        raise toml.error("topology.clusters", f"{problem}, got "
                                              f"{list(scenario.topology.clusters)}")
    if scenario.nemesis.quiet_end_s >= scenario.duration_s:
        raise toml.expected("nemesis.quiet_end_s", f"less than the run's duration_s "
                            f"({scenario.duration_s:g})", scenario.nemesis.quiet_end_s)
    for seconds in ("replication_keepalive_s", "snapshot_timeout_s"):
        if getattr(scenario.topology, seconds) <= 0:
            raise toml.expected(f"topology.{seconds}", "a number of seconds above 0",
                                getattr(scenario.topology, seconds))
    return scenario


def _topology_size(toml: TomlInput, topology: Topology) -> None:
    """Refuse a topology larger than a run can start (harness/topology.py's maxima), as the
    file is read: else it passes validation and fails as the nodes run the machine out."""
    why = " (the most a run starts, docs/scenarios.md)"
    for role, most in MAX_PER_CLUSTER.items():
        key = f"{role}s"
        toml.integer(f"topology.{key}", getattr(topology, key), minimum=1, maximum=most,
                      why=why)
    if len(topology.clusters) > MAX_CLUSTERS:
        raise toml.expected("topology.clusters", f"at most {MAX_CLUSTERS} clusters{why}",
                            list(topology.clusters))
    nodes = len(topology.clusters) * sum(topology.count(role) for role in MAX_PER_CLUSTER)
    if nodes > MAX_NODES:
        raise toml.error("topology", f"expected at most {MAX_NODES} nodes in all{why}, got "
                                     f"{nodes} ({len(topology.clusters)} clusters of "
                                     f"{nodes // len(topology.clusters)})")


def _name(reader: _Reader, data: dict[str, Any], path: Path) -> str:
    name: str = reader.take(data, "name", str, default=path.stem)
    if not NAME.fullmatch(name):
        raise reader.toml.expected("name", "letters, digits, '.', '_' or '-' (at most 100, "
                                   "not starting with '.', '_' or '-'), as it names the "
                                   "runs' directory", name)
    return name


def _mutants(reader: _Reader, data: dict[str, Any]) -> tuple[str, ...]:
    """Checked against the reference implementation's catalogue, asked only when a
    scenario names any."""
    names: tuple[str, ...] = reader.take(data, "mutants", (tuple, str), default=())
    if names:
        reader.check("mutants", list(names), (tuple, tuple(sorted(reference_mutants()))))
    return names


def _expected_anomalies(reader: _Reader, data: dict[str, Any]) -> tuple[str, ...]:
    names: tuple[str, ...] = reader.take(data, "expected_anomalies", (tuple, str), default=())
    if names:
        reader.check("expected_anomalies", list(names), (tuple, CHECKER_NAMES))
        if data.get("expected") != "invalid":
            raise reader.toml.error("expected_anomalies",
                                    'only for a scenario that expects "invalid"')
    return names


def _nemesis(reader: _Reader, data: dict[str, Any]) -> NemesisSettings:
    nemesis = reader.table(data, "nemesis", NemesisSettings, {
        "schedule": SCHEDULES, "faults": (tuple, FAULT_NAMES), "roles": (tuple, AIMS),
        "aim_clusters": AIM_CLUSTERS, "lengths_s": (tuple, float), "background": FAULT_NAMES},
        skip={"timeline"})
    timeline = []
    raw = data.get("nemesis", {})
    for n, item in enumerate(reader.take(raw, "timeline", list, default=[], prefix="nemesis")):
        timeline.append(reader.table({"timeline": item}, "timeline", TimedFault,
                                     {"fault": FAULT_NAMES, "targets": (tuple, str)},
                                     prefix=f"nemesis.timeline[{n}]", whole=True))
    if nemesis.schedule == "random" and not nemesis.faults:
        raise reader.toml.error("nemesis.faults", f"a random schedule needs at least one "
                                                  f"fault, one of {', '.join(FAULT_NAMES)}")
    if nemesis.schedule == "timeline" and not timeline:
        raise reader.toml.error("nemesis.timeline", "a timeline schedule needs "
                                                    "[[nemesis.timeline]] entries")
    if nemesis.overlap > 1:
        raise reader.toml.expected("nemesis.overlap", "a share from 0 to 1", nemesis.overlap)
    if nemesis.background is not None and nemesis.schedule != "random":
        raise reader.toml.error("nemesis.background", "only a random schedule takes a "
                                "background fault (a timeline lists it among its faults)")
    if nemesis.background is not None and nemesis.background_s <= 0:
        raise reader.toml.expected("nemesis.background_s", "the background fault's length, "
                                   "more than 0 seconds", nemesis.background_s)
    if nemesis.quiet_end_s and nemesis.schedule != "random":
        raise reader.toml.error("nemesis.quiet_end_s", "only a random schedule takes a quiet "
                                "end (a timeline's faults end where it says)")
    settings: NemesisSettings = dataclasses.replace(nemesis, timeline=tuple(timeline))
    return settings


class _Reader:
    """The scenario's schema over the checks of history/toml_input.py: a setting's kind
    (a type, a tuple of the strings it may be, or `(tuple, kind)` for a list of `kind`)
    picks the check, and a table is read into the settings dataclass of its layer."""

    def __init__(self, toml: TomlInput) -> None:
        self.toml = toml

    def take(self, table: dict[str, Any], key: str, kind: Any, *, default: Any, prefix: str = "",
             minimum: float = 0) -> Any:
        return self.toml.optional(table, key, prefix, lambda name, value: self.check(
            name, value, kind, minimum=minimum), default)

    def check(self, name: str, value: Any, kind: Any, *, minimum: float = 0) -> Any:
        if isinstance(kind, tuple) and kind and kind[0] is tuple:  # a list of `kind[1]`
            return self.toml.items(name, value, lambda n, v: self.check(n, v, kind[1]))
        if isinstance(kind, tuple):  # one of these strings
            return self.toml.choice(name, value, kind)
        if kind is float:
            return self.toml.number(name, value, minimum=minimum)
        if kind is int:
            return self.toml.integer(name, value, minimum=int(minimum))
        if kind is bool:
            return self.toml.boolean(name, value)
        if kind is list:
            return self.toml.items(name, value, lambda n, v: v)
        return self.toml.string(name, value)

    def table(self, data: dict[str, Any], key: str, cls: type[Any], choices: dict[str, Any], *,
              prefix: str = "", skip: Collection[str] = frozenset(), whole: bool = False) -> Any:
        """`data[key]` as a `cls`; `whole`: every field without a default is required."""
        name = prefix or key
        fields = {spec.name: spec for spec in dataclasses.fields(cls)}
        raw = self.toml.table(name, data.get(key, {}), set(fields) | set(skip))
        values = {}
        for field_name, spec in fields.items():
            if field_name in skip:
                continue
            kind = choices.get(field_name, _python_type(str(spec.type)))
            # Counts (brokers, rate, keys...) need at least one; times may be zero.
            read = partial(self.check, kind=kind, minimum=1 if kind is int else 0)
            if whole and spec.default is MISSING and spec.default_factory is MISSING:
                values[field_name] = self.toml.required(raw, field_name, name, read)
            elif field_name in raw:
                values[field_name] = read(f"{name}.{field_name}", raw[field_name])
        return cls(**values)

    def no_extra(self, table: dict[str, Any], known: set[str]) -> None:
        """The file's top level has no key but the `known` ones."""
        self.toml.table("", table, known)


def _python_type(annotation: str) -> Any:
    return {"int": int, "float": float, "str": str, "bool": bool}.get(annotation, str)


def scenario_toml(scenario: Scenario) -> str:
    """The scenario as TOML with every default written out: a run directory's
    `scenario.toml`, which `load_scenario` reads back to the same scenario (the `name` is
    kept, so a copied file still names its runs the same)."""
    top = {k: v for k, v in vars(scenario).items() if k != "path"}
    lines: list[str] = []
    tables: list[tuple[str, Any]] = []
    for key, value in top.items():
        if hasattr(value, "__dataclass_fields__"):
            tables.append((key, value))
        elif value is not None:
            lines.append(f"{key} = {_toml_value(value)}")
    for name, table in tables:
        lines += ["", f"[{name}]"]
        nested = []
        for key, value in vars(table).items():
            if isinstance(value, tuple) and value and hasattr(value[0], "__dataclass_fields__"):
                nested.append((key, value))
            elif hasattr(value, "__dataclass_fields__"):  # a workload's knobs: keys of its table
                lines += [f"{k} = {_toml_value(v)}" for k, v in vars(value).items()]
            elif value is not None:  # an unset optional stays unset when read back
                lines.append(f"{key} = {_toml_value(value)}")
        for key, items in nested:
            for item in items:
                lines += ["", f"[[{name}.{key}]]"]
                lines += [f"{k} = {_toml_value(v)}" for k, v in vars(item).items()]
    return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        # JSON string escapes are valid TOML basic-string escapes.
        return json.dumps(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"no TOML spelling for {value!r}")
