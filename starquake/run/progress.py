"""What a run shows while it runs: the phase, operation counts by outcome, and the faults
in force. On a terminal it is a live table (rich); elsewhere (CI logs, pipes) only the
phase lines are printed, so logs stay readable."""

from __future__ import annotations

import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.table import Table

from history.writer import HistoryWriter
from nemesis.runner import FaultStatus


class CountingHistory(HistoryWriter):
    """A history writer that also counts events by operation and type, for the display."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.counts: Counter[tuple[str, str]] = Counter()
        self._count_lock = threading.Lock()

    def record(self, process: str, type: str, f: str, **fields: Any) -> int:
        index = super().record(process, type, f, **fields)
        with self._count_lock:
            self.counts[(f, type)] += 1
        return index

    def snapshot(self) -> Counter[tuple[str, str]]:
        with self._count_lock:
            return Counter(self.counts)


class Progress:
    """Use as a context manager around the run; `phase()` announces each step."""

    def __init__(self, console: Console, history: CountingHistory, faults: FaultStatus,
                 duration_s: float) -> None:
        self._console = console
        self._history = history
        self._faults = faults
        self._duration_s = duration_s
        self._phase = "starting"
        self._load_started: float | None = None
        self._live: Live | None = None

    def phase(self, text: str, *, load_started: float | None = None) -> None:
        self._phase = text
        if load_started is not None:
            self._load_started = load_started
        self._console.print(text, style="bold", markup=False, highlight=False)

    def _table(self) -> Table:
        counts = self._history.snapshot()
        table = Table(show_header=True, header_style="bold", box=None)
        for column in ("phase", "elapsed", "send ok/fail/info", "recv", "faults now"):
            table.add_column(column)
        elapsed = ("-" if self._load_started is None
                   else f"{time.monotonic() - self._load_started:.0f}/{self._duration_s:.0f} s")
        sends = "/".join(str(counts[("send", t)]) for t in ("ok", "fail", "info"))
        table.add_row(self._phase, elapsed, sends, str(counts[("recv", "ok")]),
                      self._faults.text())
        return table

    def __enter__(self) -> Progress:
        if self._console.is_terminal:
            self._live = Live(get_renderable=self._table, console=self._console,
                              refresh_per_second=2, transient=True)
            self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
