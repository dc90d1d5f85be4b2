"""The run's display: a live table of counts and faults on a terminal, only the phase
lines anywhere else (so CI logs stay readable)."""

from __future__ import annotations

import io
import time
from pathlib import Path

from rich.console import Console

from nemesis.runner import FaultStatus
from starquake.run.progress import CountingHistory, Progress


def _show(tmp_path: Path, terminal: bool) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=100)
    history = CountingHistory(tmp_path / f"history-{terminal}.jsonl")
    faults = FaultStatus()
    faults.begin(1, "kill", "a-broker1")
    with Progress(console, history, faults, 15) as progress:
        progress.phase("load for 15 s", load_started=time.monotonic())
        for outcome in ("ok", "ok", "info"):
            history.record("p0", "invoke", "send", value="m")
            history.record("p0", outcome, "send", value="m")
        time.sleep(0.7)
    history.close()
    return out.getvalue()


def test_a_terminal_sees_counts_and_faults(tmp_path: Path) -> None:
    shown = _show(tmp_path, terminal=True)
    assert "2/0/1" in shown and "kill a-broker1" in shown


def test_a_log_gets_the_phase_lines_only(tmp_path: Path) -> None:
    assert _show(tmp_path, terminal=False) == "load for 15 s\n"
