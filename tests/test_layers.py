"""The layers run one way (docs/architecture.md): every import of every module, including
those inside functions, is checked against the table of which package may import which.

The table is the architecture; the check reads the code, so a new module or a moved one
is covered without naming files."""

from __future__ import annotations

import ast
from collections.abc import Iterator
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
    """(line, module) for every absolute import in the file."""
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module


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
    body = f"def f() -> None:\n{line}\n" if line.startswith(" ") else f"{line}\n"
    (tmp_path / package / "bad.py").write_text(body)
    found = back_edges(tmp_path, MAY_IMPORT)
    assert len(found) == 1 and found[0].startswith(f"{package}/bad.py:")
