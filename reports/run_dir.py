"""What a report reads from a run directory, and nothing else.

A run directory (`runs/<scenario>/<timestamp>-<seed>/`) holds `results.json` (from
`starquake check`), the history (`history.jsonl` and/or `history.parquet`), and optionally
`scenario.toml` (the scenario as resolved for this run), `command.txt` (the command that
reproduces it) and node logs under `logs/`. Every fact a report shows beside the verdict
comes from one of these; when two name the same fact, the more specific one wins:
`command.txt` over the `meta` event over the scenario.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from history.errors import BadInput
from history.reader import HistoryError, find_history

EXPECTED_VERDICTS = ("valid", "invalid", "unknown")


class RunDirectoryError(BadInput):
    """A run directory a report cannot be made from; the message names the file."""


@dataclass(frozen=True)
class RunDirectory:
    path: Path
    results: dict[str, Any]
    history: Path
    meta: dict[str, Any]
    """The history's `meta` event detail, or {} when the history has none."""
    scenario: dict[str, Any]
    """The resolved `scenario.toml`, or {} when the run directory has none."""
    command: str | None
    """The exact command that reproduces the run, when the run recorded it."""
    logs: tuple[Path, ...]

    @property
    def verdict(self) -> str:
        return verdict_name(self.results.get("valid"))

    @property
    def scenario_name(self) -> str | None:
        return (self.results.get("scenario") or self.meta.get("scenario")
                or self.scenario.get("name"))

    @property
    def seed(self) -> int | None:
        for source in (self.results, self.meta, self.scenario):
            if source.get("seed") is not None:
                seed: int = source["seed"]
                return seed
        return None

    @property
    def mutants(self) -> list[str]:
        found = self.meta.get("mutants") or self.scenario.get("mutants") or []
        return [found] if isinstance(found, str) else list(found)

    @property
    def expected(self) -> str:
        """The verdict the run is meant to reach: the meta event's or the scenario's
        `expected`, else valid (the scenario format's default)."""
        expected = self.meta.get("expected") or self.scenario.get("expected") or "valid"
        return expected if expected in EXPECTED_VERDICTS else "valid"

    @property
    def reproduce(self) -> tuple[str | None, str]:
        """(command, where it came from). Derived from scenario and seed when the run did
        not record its command; None when not even those are known."""
        if self.command:
            return self.command, "command.txt" if (self.path / "command.txt").is_file() else "meta"
        if self.scenario_name is None or self.seed is None:
            return None, "unknown: no command.txt, no command in the meta event, no seed"
        return (f"starquake run {self.scenario_name} --seed {self.seed}",
                "derived from the scenario name and seed")

    @property
    def expected_anomalies(self) -> list[str]:
        """Checkers that must each find something for the expected `invalid` to count."""
        found = (self.meta.get("expected_anomalies") or self.scenario.get("expected_anomalies")
                 or [])
        return [found] if isinstance(found, str) else [str(name) for name in found]

    @property
    def missing_anomalies(self) -> list[str]:
        return missing_anomalies(self.results, self.expected_anomalies)

    @property
    def met_expectation(self) -> bool:
        """The expected verdict, reached through every expected anomaly."""
        return self.verdict == self.expected and not self.missing_anomalies

    def anomalies(self) -> dict[str, int]:
        """Checker name -> count, for the checkers that found something."""
        return found_anomalies(self.results)


def found_anomalies(results: dict[str, Any]) -> dict[str, int]:
    """Checker name -> count, for the checkers of `results` that found something."""
    return {name: checker.get("count", 0)
            for name, checker in results.get("checkers", {}).items() if checker.get("count")}


def missing_anomalies(results: dict[str, Any], expected: list[str]) -> list[str]:
    """The expected anomalies no checker of `results` found."""
    found = found_anomalies(results)
    return [name for name in expected if name not in found]


def verdict_name(valid: Any) -> str:
    return "valid" if valid is True else "invalid" if valid is False else "unknown"


def load_run(path: Path) -> RunDirectory:
    """Read a run directory; raises RunDirectoryError naming what is missing or corrupt."""
    if not path.is_dir():
        raise RunDirectoryError(f"{path}: not a run directory (no such directory)")
    results_path = path / "results.json"
    if not results_path.is_file():
        raise RunDirectoryError(f"{results_path}: missing; run `starquake check {path}` first")
    try:
        results = json.loads(results_path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        raise RunDirectoryError(f"{results_path}: not valid JSON ({exc})") from None
    if not isinstance(results, dict) or "valid" not in results or not isinstance(
            results.get("checkers"), dict):
        raise RunDirectoryError(f"{results_path}: not a results.json of `starquake check` "
                                "(no 'valid' or 'checkers')")
    try:
        history = find_history(path)
    except HistoryError as exc:
        raise RunDirectoryError(str(exc)) from None
    meta = _meta(history)
    command_file = path / "command.txt"
    command = (command_file.read_text().strip() if command_file.is_file()
               else meta.get("command")) or None
    return RunDirectory(path, results, history, meta, _scenario(path / "scenario.toml"),
                        command, _logs(path))


def _meta(history: Path) -> dict[str, Any]:
    """The `meta` event's detail. The spec puts it first, so only the first event is read."""
    first = _first_event(history)
    if not first or first.get("f") != "meta" or not first.get("detail"):
        return {}
    try:
        detail = orjson.loads(first["detail"])
    except orjson.JSONDecodeError:
        return {}
    return detail if isinstance(detail, dict) else {}


def _first_event(history: Path) -> dict[str, Any] | None:
    if history.suffix == ".parquet":
        import pyarrow.parquet as pq

        file = pq.ParquetFile(history)
        if file.metadata.num_rows == 0:
            return None
        batch = next(file.iter_batches(batch_size=1, columns=["f", "detail"]))
        first: dict[str, Any] = batch.to_pylist()[0]
        return first
    with open(history, "rb") as lines:
        line = lines.readline()
    try:
        event = orjson.loads(line) if line.strip() else None
    except orjson.JSONDecodeError:
        raise RunDirectoryError(f"{history}:1: not a JSON object") from None
    return event if isinstance(event, dict) else None


def _scenario(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        return tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise RunDirectoryError(f"{path}: not valid TOML ({exc})") from None


def _logs(path: Path) -> tuple[Path, ...]:
    """Node logs: every file under `logs/`, and `*.log` beside the history."""
    logs = path / "logs"
    found = [p for p in logs.rglob("*") if p.is_file()] if logs.is_dir() else []
    found += [p for p in path.glob("*.log") if p.is_file()]
    return tuple(sorted(found))
