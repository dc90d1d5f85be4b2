"""The layers run one way (docs/architecture.md): every import of every module, including
those inside functions, is checked against the table of which package may import which,
and inside `impl/` against the order of its own layers, with no cycle between its units.

The tables are the architecture; the check reads the code, so a new module or a moved one
is covered without naming files."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence
from itertools import pairwise
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

MAY_IMPORT: dict[str, frozenset[str]] = {
    # the command line and the run, suite and bench pipelines (the fuzz bench builds and
    # spoils frames itself)
    "starquake": frozenset({"scenarios", "nemesis", "harness", "checkers", "reports",
                            "history", "wire"}),
    # scenario files: compose the settings of the layers below
    "scenarios": frozenset({"nemesis", "harness", "history"}),
    # fault kinds, schedules, the runner: act on a Target
    "nemesis": frozenset({"harness", "history"}),
    # Targets, deployments of the reference implementation, workloads, clients
    "harness": frozenset({"history", "wire"}),
    # judging and showing a history: they know only its format
    "checkers": frozenset({"history"}),
    "reports": frozenset({"history"}),
    # the history format, writer and reader; exit codes
    "history": frozenset(),
    # Pulsar's binary protocol, used by both sides of it
    "wire": frozenset(),
    # the system under test: reached only through its processes and protocols
    "impl": frozenset({"wire"}),
}


def imports_of(path: Path) -> Iterator[tuple[int, str]]:
    """(line, dotted name) for every absolute import in the file: `from a.b import c` gives
    `a.b.c`, so `from impl import resources` names the module it imports."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield from ((node.lineno, f"{node.module}.{alias.name}") for alias in node.names)


def back_edges(root: Path, table: dict[str, frozenset[str]]) -> list[str]:
    """Every import from one of our packages into another that the table does not allow."""
    found = []
    for package, allowed in table.items():
        for path in sorted((root / package).rglob("*.py")):
            for line, module in imports_of(path):
                top = module.split(".")[0]
                if top in table and top != package and top not in allowed:
                    found.append(f"{path.relative_to(root)}:{line}: {package} imports {module}")
    return found


def test_no_import_runs_against_the_layers() -> None:
    assert back_edges(REPO, MAY_IMPORT) == []


def test_the_layer_table_has_no_cycle() -> None:
    def below(package: str, seen: tuple[str, ...]) -> None:
        assert package not in seen, f"cycle: {' -> '.join((*seen, package))}"
        for lower in MAY_IMPORT[package]:
            below(lower, (*seen, package))

    for package in MAY_IMPORT:
        below(package, ())


def test_every_package_of_the_project_is_in_the_table() -> None:
    packages = {p.parent.name for p in REPO.glob("*/__init__.py")} - {"tests"}
    assert packages == set(MAY_IMPORT)


def write_module(root: Path, relative: str, line: str) -> None:
    """A module of a scratch tree holding one import, inside a function when indented."""
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"def f() -> None:\n{line}\n" if line.startswith(" ") else f"{line}\n")


@pytest.mark.parametrize(("package", "line"), [
    ("history", "from checkers.load import prepare"),
    ("checkers", "import reports.report"),
    ("harness", "    from nemesis.runner import NemesisRunner"),  # inside a function
    ("reports", "from checkers.anomaly import CheckSettings"),
    ("harness", "from impl.client import producer"),
])
def test_a_back_edge_is_caught(tmp_path: Path, package: str, line: str) -> None:
    """The twin: a module importing upwards is named, with its line."""
    for name in MAY_IMPORT:
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("")
    write_module(tmp_path, f"{package}/bad.py", line)
    found = back_edges(tmp_path, MAY_IMPORT)
    assert len(found) == 1 and found[0].startswith(f"{package}/bad.py:")


# Inside impl/: its units, each a package of impl or a module at impl's root, in layers,
# bottom first. A unit may import its own layer and those below; a process's entry point
# (any `__main__.py`) sits above them all, wires them, and is imported by nothing.
IMPL_LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    # the ZooKeeper store and its idioms, names, bug switches, policy values, cursor names
    ("primitives", frozenset({"metadata", "naming", "mutants", "retention", "system_cursors",
                             "json_fields"})),
    # cluster, tenant, namespace, partitioned-topic and topic-policy records
    ("records", frozenset({"resources", "partitioned_topics", "topic_policies"})),
    ("ledger store", frozenset({"bookie"})),
    ("managed ledgers", frozenset({"storage"})),
    # who serves a bundle, and who may do what
    ("ownership", frozenset({"ownership", "security"})),
    # what a broker runs beside its topics: geo-replication, PIP-468
    ("topic features", frozenset({"replication", "scalable"})),
    ("broker", frozenset({"broker"})),
    ("admin", frozenset({"admin"})),
    ("lookup", frozenset({"lookup"})),
)
ENTRY_POINT = "__main__"
IMPL_ROOT = "__init__"
"""`impl/__init__.py`, below every unit: it imports none."""


def impl_unit(parts: Sequence[str]) -> str:
    """The unit of `impl.<parts>`: the entry point for any `__main__`, else its package
    under impl or its module at impl's root."""
    return ENTRY_POINT if ENTRY_POINT in parts else parts[0]


def impl_imports(root: Path) -> Iterator[tuple[str, str, str, str]]:
    """(file:line, importing unit, imported unit, name) for every import of one unit of
    impl by another, and of any entry point: once a line per unit it imports (the first
    name it takes from there)."""
    for path in sorted((root / "impl").rglob("*.py")):
        unit = impl_unit(path.relative_to(root / "impl").with_suffix("").parts)
        seen: set[tuple[int, str]] = set()
        for line, name in imports_of(path):
            top, _, rest = name.partition(".")
            if top != "impl" or not rest:
                continue
            target = impl_unit(rest.split("."))
            if (target != unit or target == ENTRY_POINT) and (line, target) not in seen:
                seen.add((line, target))
                yield f"{path.relative_to(root)}:{line}", unit, target, name


def impl_back_edges(root: Path, layers: tuple[tuple[str, frozenset[str]], ...]) -> list[str]:
    """Every import inside impl that runs up its layers, into an entry point, or into a
    unit that is in no layer."""
    layer_of = {unit: (index, name) for index, (name, units) in enumerate(layers)
                for unit in units}
    layer_of[IMPL_ROOT] = (-1, "impl's root")
    layer_of[ENTRY_POINT] = (len(layers), "entry points")
    found = []
    for where, unit, target, name in impl_imports(root):
        if stray := [u for u in (unit, target) if u not in layer_of]:
            found.append(f"{where}: {name}: impl.{stray[0]} is in no layer")
        elif target == ENTRY_POINT:
            found.append(f"{where}: impl.{unit} imports {name}, an entry point")
        elif layer_of[target][0] > layer_of[unit][0]:
            found.append(f"{where}: impl.{unit} ({layer_of[unit][1]}) imports {name} "
                         f"({layer_of[target][1]}, above it)")
    return found


def impl_cycle(root: Path) -> list[str]:
    """The imports that close one cycle between units of impl, in order; [] when none."""
    graph: dict[str, dict[str, str]] = {}
    for where, unit, target, name in impl_imports(root):
        graph.setdefault(unit, {}).setdefault(target, f"{where}: {name}")
    done: set[str] = set()

    def walk(unit: str, path: tuple[str, ...]) -> list[str]:
        if unit in path:
            ring = (*path[path.index(unit):], unit)
            return [graph[a][b] for a, b in pairwise(ring)]
        if unit in done:
            return []
        for target in graph.get(unit, {}):
            if cycle := walk(target, (*path, unit)):
                return cycle
        done.add(unit)
        return []

    for unit in sorted(graph):
        if cycle := walk(unit, ()):
            return cycle
    return []


def test_no_import_runs_against_impls_layers() -> None:
    assert impl_back_edges(REPO, IMPL_LAYERS) == []


def test_no_cycle_between_impls_units() -> None:
    assert impl_cycle(REPO) == []


def test_every_unit_of_impl_is_in_one_layer() -> None:
    impl = REPO / "impl"
    units = ({p.parent.name for p in impl.glob("*/__init__.py")}
             | {p.stem for p in impl.glob("*.py")}) - {IMPL_ROOT}
    layered = [unit for _, members in IMPL_LAYERS for unit in members]
    assert sorted(layered) == sorted(units)


@pytest.mark.parametrize(("module", "line"), [
    ("impl/storage/factory.py", "from impl.ownership.topic_name import TopicName"),
    ("impl/bookie/registration.py", "    from impl.ownership.ephemeral import claim_ephemeral"),
    ("impl/system_cursors.py", "from impl.replication.replicator import is_replicator_cursor"),
    ("impl/ownership/namespace_service.py", "from impl.broker import commands"),
    ("impl/broker/main.py", "from impl.admin.app import build_admin_app"),
    ("impl/mutants.py", "from impl import resources"),
    ("impl/admin/app.py", "import impl.lookup.__main__"),
    ("impl/lookup/__main__.py", "from impl.bookie.__main__ import main"),
    ("impl/broker/topic.py", "from impl.nowhere import thing"),
])
def test_an_import_up_impls_layers_is_caught(tmp_path: Path, module: str, line: str) -> None:
    """The twin: a module of impl importing a layer above its own, or an entry point, is
    named with its line."""
    write_module(tmp_path, module, line)
    found = impl_back_edges(tmp_path, IMPL_LAYERS)
    assert len(found) == 1 and found[0].startswith(f"{module}:")


def test_an_entry_point_may_import_every_layer(tmp_path: Path) -> None:
    write_module(tmp_path, "impl/broker/__main__.py", "from impl.admin.app import build_admin_app")
    write_module(tmp_path, "impl/bookie/__main__.py", "from impl.lookup.server import serve")
    assert impl_back_edges(tmp_path, IMPL_LAYERS) == []


def test_a_cycle_inside_one_layer_is_caught(tmp_path: Path) -> None:
    """Units of one layer may import each other, but not round in a cycle."""
    write_module(tmp_path, "impl/replication/a.py", "from impl.scalable.b import x")
    write_module(tmp_path, "impl/scalable/b.py", "    import impl.replication.a")
    assert impl_back_edges(tmp_path, IMPL_LAYERS) == []
    assert impl_cycle(tmp_path) == ["impl/replication/a.py:1: impl.scalable.b.x",
                                    "impl/scalable/b.py:2: impl.replication.a"]
