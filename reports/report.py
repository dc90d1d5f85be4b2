"""`report.html` of one run: the verdict first, then what proves each anomaly, the plots,
the operation counts and links to the timeline and the node logs."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from history.checker_registry import definition
from history.schema import FIELDS
from reports.fault_plots import availability, failover_windows
from reports.figures import Fault, Omitted, Plot, PlotInput
from reports.history_view import EventBlock, HistoryView
from reports.layout_plot import segment_dag
from reports.run_dir import RunDirectory, load_run, verdict_name
from reports.templates import render
from reports.time_plots import consumer_assignments, latency, replication_lag, throughput
from reports.timeline import page_file, write_timeline

CONTEXT_EVENTS = 3
OUTCOMES = ("ok", "fail", "info", "pending")

VERDICT_TEXT = {
    "valid": "Every checker passed.",
    "invalid": "Anomalies found: {names}.",
    "unknown": "No anomaly proven, but not every checker could decide: {names}.",
}

PLOTS: tuple[Callable[[PlotInput], Plot | Omitted], ...] = (
    throughput, latency, segment_dag, consumer_assignments, replication_lag,
    failover_windows, availability)


@dataclass(frozen=True)
class _Example:
    events: list[int]
    facts: dict[str, Any]
    blocks: list[EventBlock]
    columns: list[str]


@dataclass(frozen=True)
class _Section:
    name: str
    count: int
    definition: str
    undecided: bool
    reason: str
    error: str | None
    """The exception that kept the checker from judging, as `Type: message`."""
    examples: list[_Example]


def write_report(path: Path) -> Path:
    """Write `report.html` and the timeline pages into the run directory `path`.

    Raises RunDirectoryError (exit 3) when the directory lacks results.json or a history,
    or either is corrupt.
    """
    run = load_run(path)
    view = HistoryView(run.history)
    results = run.results
    stats = results.get("stats") or {}
    faults = [Fault.from_stats(entry) for entry in stats.get("nemesis", [])]
    raw_sections = _raw_sections(results)
    examples_indexes = [e["events"][0] for _, _, found in raw_sections for e in found
                        if e.get("events")]
    title = f"{run.scenario_name or path.name} seed {run.seed}"
    pages = write_timeline(view, path, title, examples_indexes)
    sections = {name: _section(name, checker, found, view)
                for name, checker, found in raw_sections}
    built = [build(PlotInput(view, faults, stats)) for build in PLOTS]
    command, command_source = run.reproduce
    verdict = run.verdict

    def timeline_page(index: int) -> str | None:
        page = pages.page_of(index)
        return f"{page_file(page)}#e{index}" if page else None

    html = render(
        "report.html.jinja", run=run, results=results, verdict=verdict,
        verdict_text=_verdict_text(run), command=command, command_source=command_source,
        history_name=run.history.name, duration_s=view.duration_s, sections=sections,
        context=CONTEXT_EVENTS, verdict_of=verdict_name, timeline_page=timeline_page,
        faults=faults, plots=[p for p in built if isinstance(p, Plot)],
        omitted=[p for p in built if isinstance(p, Omitted)], outcomes=OUTCOMES,
        operations=_operation_table(stats),
        logs=[os.path.relpath(log, path) for log in run.logs])
    out = path / "report.html"
    out.write_text(html)
    return out


def _verdict_text(run: RunDirectory) -> str:
    checkers = run.results["checkers"]
    if run.verdict == "invalid":
        names = ", ".join(f"{n} ({c})" for n, c in run.anomalies().items())
    else:
        names = ", ".join(n for n, c in checkers.items() if c.get("valid") == "unknown")
    return VERDICT_TEXT[run.verdict].format(names=names)


def _raw_sections(
        results: dict[str, Any]) -> list[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    """(checker, its results, its examples) for checkers that found or could not decide
    something, or failed; an undecided checker's examples are the still-missing cases."""
    sections = []
    for name, checker in results["checkers"].items():
        if checker.get("count") or checker.get("error"):
            sections.append((name, checker, checker.get("examples") or []))
        elif checker.get("undecided"):
            sections.append((name, checker, checker.get("undecided_examples") or []))
    return sections


def _section(name: str, checker: dict[str, Any], found: list[dict[str, Any]],
             view: HistoryView) -> _Section:
    examples = []
    for example in found:
        indexes = [int(i) for i in example.get("events") or []]
        blocks = view.blocks_around(indexes, CONTEXT_EVENTS)
        present = {key for block in blocks for event in block.events for key in event}
        examples.append(_Example(indexes, {k: v for k, v in example.items() if k != "events"},
                                 blocks, [c for c in FIELDS if c in present]))
    undecided = not checker.get("count")
    error = checker.get("error")
    return _Section(name, checker.get("undecided", 0) if undecided else checker["count"],
                    definition(name), undecided, checker.get("reason", ""),
                    f"{error.get('type')}: {error.get('message')}" if error else None, examples)


def _operation_table(stats: dict[str, Any]) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for entry in stats.get("operations", []):
        table.setdefault(entry["f"], {})[entry["outcome"]] = entry["count"]
    return dict(sorted(table.items()))
