"""The index of a suite's runs: `index.html` for people and `junit.xml` for CI.

Each run is one JUnit testcase that fails when its verdict differs from the one it
expected (the meta event's or the scenario's `expected`, else valid), so a mutant scenario
that is caught passes and one that slips through fails.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from history.reader import HistoryError, discover_runs
from reports.junit import add_properties
from reports.run_dir import RunDirectory, load_run
from reports.templates import render


@dataclass(frozen=True)
class SuiteRun:
    run: RunDirectory
    name: str
    duration_s: float | None
    report: str | None
    """Relative link to the run's report.html, or None when it has none."""

    @property
    def passed(self) -> bool:
        return self.run.met_expectation


def find_runs(top: Path) -> list[Path]:
    """Checked run directories at or below `top`, found as `starquake check` finds runs
    (each counted once even when a symlink such as `runs/latest` reaches it again)."""
    try:
        histories = discover_runs(top)
    except HistoryError:
        return []
    return sorted(h.parent for h in histories.values() if (h.parent / "results.json").is_file())


def write_suite_index(runs: list[Path], out_dir: Path) -> tuple[Path, Path]:
    """Write `index.html` and `junit.xml` for `runs` into `out_dir`; returns both paths.

    Raises RunDirectoryError when a run lacks a readable results.json or history.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    entries = [_entry(path, out_dir) for path in runs]
    index = out_dir / "index.html"
    index.write_text(render("index.html.jinja", runs=entries,
                            passed=sum(e.passed for e in entries)))
    junit = out_dir / "junit.xml"
    tree = ET.ElementTree(_junit(entries))
    ET.indent(tree)
    tree.write(junit, encoding="utf-8", xml_declaration=True)
    return index, junit


def _entry(path: Path, out_dir: Path) -> SuiteRun:
    run = load_run(path)
    report = path / "report.html"
    name = os.path.relpath(path, out_dir) if path.resolve() != out_dir.resolve() else path.name
    return SuiteRun(run, name, _duration_s(run.history),
                    os.path.relpath(report, out_dir) if report.is_file() else None)


def _duration_s(history: Path) -> float | None:
    """The last event's time: from Parquet statistics, or the JSON file's last line."""
    parquet = history.with_suffix(".parquet")
    if parquet.is_file():
        metadata = pq.ParquetFile(parquet).metadata
        column = metadata.schema.names.index("time")
        highest = [metadata.row_group(g).column(column).statistics
                   for g in range(metadata.num_row_groups)]
        if highest and all(s is not None and s.has_min_max for s in highest):
            latest: int = max(s.max for s in highest)
            return latest / 1e9
    return _last_time_jsonl(history) if history.suffix == ".jsonl" else None


def _last_time_jsonl(history: Path) -> float | None:
    import orjson

    with open(history, "rb") as f:
        f.seek(max(0, history.stat().st_size - 65536))
        lines = f.read().splitlines()
    for line in reversed(lines):
        try:
            time: float = orjson.loads(line)["time"]
            return time / 1e9
        except (orjson.JSONDecodeError, KeyError, TypeError):
            continue  # a torn last line
    return None


def _junit(entries: list[SuiteRun]) -> ET.Element:
    failures = sum(not e.passed for e in entries)
    total_time = sum(e.duration_s or 0 for e in entries)
    suites = ET.Element("testsuites", name="starquake", tests=str(len(entries)),
                        failures=str(failures), errors="0", time=f"{total_time:.3f}")
    suite = ET.SubElement(suites, "testsuite", name="starquake", tests=str(len(entries)),
                          failures=str(failures), errors="0", skipped="0",
                          time=f"{total_time:.3f}")
    add_properties(suite)
    for entry in entries:
        run = entry.run
        case = ET.SubElement(suite, "testcase", classname=f"starquake.{run.scenario_name or 'run'}",
                             name=entry.name, time=f"{entry.duration_s or 0:.3f}")
        anomalies = ", ".join(f"{n}={c}" for n, c in run.anomalies().items()) or "no anomalies"
        command, _ = run.reproduce
        text = f"{run.path}\nanomalies: {anomalies}\nreproduce: {command or 'unknown'}"
        if not entry.passed:
            missing = run.missing_anomalies
            wanted = f" with {', '.join(missing)}" if missing else ""
            failure = ET.SubElement(case, "failure", type="verdict",
                                    message=f"expected {run.expected}{wanted}, got "
                                            f"{run.verdict} ({anomalies})")
            failure.text = text
        ET.SubElement(case, "system-out").text = text
    return suites
