"""The scenarios that ship with starquake, found by name wherever the package is installed.

The scenario files live beside this module (`smoke/`, `full/`, `mutants/`, and
`conformance/`, the features of `starquake conform`) and are package data, so a checkout
and an installed wheel offer the same names: `smoke/topic-faults` is
`scenarios/smoke/topic-faults.toml`. A command-line argument is resolved by
`resolve_scenario` (for `run` and `scenario validate`) or `resolve_suite` (for `suite`): a
path that exists always wins, so a file of your own is never shadowed by a packaged name.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from scenarios.format import ScenarioError

SUITES = ("smoke", "full", "mutants", "conformance")
SUFFIX = ".toml"
# A name may be written as the file's path inside a checkout: scenarios/smoke/x.toml.
_PACKAGE_PREFIX = "scenarios/"


def _package_dir() -> Path:
    """This package's directory; `importlib.resources` finds it in a checkout, an editable
    install and site-packages alike (a zipped install is not supported: runs need files)."""
    return Path(str(resources.files("scenarios")))


def suites() -> dict[str, list[Path]]:
    """Every packaged suite and its scenario files, in name order."""
    root = _package_dir()
    return {suite: sorted(p for p in (root / suite).glob(f"*{SUFFIX}") if p.is_file())
            for suite in SUITES}


def packaged_scenarios() -> dict[str, Path]:
    """Every packaged scenario by name (`suite/stem`, e.g. `smoke/topic-faults`), grouped
    by suite in `SUITES` order and by name within a suite."""
    return {f"{suite}/{path.stem}": path
            for suite, files in suites().items() for path in files}


def _name(text: str) -> str:
    """The packaged name `text` spells, if any: without `.toml`, a leading `scenarios/`
    or a trailing slash."""
    name = text.strip().rstrip("/")
    name = name.removeprefix("./").removeprefix(_PACKAGE_PREFIX)
    return name.removesuffix(SUFFIX)


def _lookup(text: str) -> Path | None:
    """The packaged scenario `text` names, with or without its suite; None if it names
    none. A bare stem that two suites share is ambiguous and refused."""
    scenarios = packaged_scenarios()
    name = _name(text)
    if name in scenarios:
        return scenarios[name]
    if "/" in name:
        return None
    matches = [n for n in scenarios if n.split("/", 1)[1] == name]
    if len(matches) > 1:
        raise ScenarioError(f"{text}: ambiguous packaged scenario name; "
                            f"write one of {', '.join(matches)}")
    return scenarios[matches[0]] if matches else None


def resolve_scenario(text: str) -> Path:
    """The scenario file a command-line argument means: an existing file, else a packaged
    scenario (`smoke/topic-faults`, `topic-faults`, `smoke/topic-faults.toml`). Raises
    `ScenarioError` (one line naming `text` and the known names) otherwise."""
    path = Path(text)
    if path.is_file():
        return path
    if path.is_dir():
        raise ScenarioError(f"{text}: is a directory, not a scenario file "
                            "(`starquake suite` runs a directory)")
    found = _lookup(text)
    if found is None:
        raise ScenarioError(f"{text}: no such scenario file or packaged scenario; packaged: "
                            f"{', '.join(packaged_scenarios())}")
    return found


def resolve_suite(text: str) -> list[Path]:
    """The scenario files a `suite` argument means: an existing directory's `*.toml` (in
    name order) or an existing file, else a packaged suite (`SUITES`), else one packaged
    scenario. Raises `ScenarioError` (one line naming `text` and the
    known suites and scenarios) otherwise."""
    path = Path(text)
    if path.is_dir():
        found = sorted(p for p in path.glob(f"*{SUFFIX}") if p.is_file())
        if not found:
            raise ScenarioError(f"{text}: no scenario files (*{SUFFIX}) in this directory")
        return found
    if path.is_file():
        return [path]
    packaged = suites()
    if _name(text) in packaged:
        return packaged[_name(text)]
    scenario = _lookup(text)
    if scenario is None:
        raise ScenarioError(f"{text}: no such scenario file, directory or packaged suite; "
                            f"suites: {', '.join(packaged)}; scenarios: "
                            f"{', '.join(packaged_scenarios())}")
    return [scenario]


def example_history() -> Path:
    """The small example history that ships with the package (docs/history.md): a
    synthetic run of a split scalable topic whose verdict is `valid`."""
    return Path(str(resources.files("history"))) / "examples" / "split-topic" / "history.jsonl"
