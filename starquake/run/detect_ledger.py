"""The detect ledger: each run a detection table counts, as one JSON line.

A ten-seed table takes longer than one sitting, and its run directories are too large to
keep. The tables need little of a run: which scenario, seed and mutants, whether it met
its expectation, what it reported instead, and when its first anomaly came. The ledger
holds exactly that, written as each run is judged, in a file small enough to keep beside
the table. `detect --resume` counts what the ledger holds instead of running it again, so
a table can grow over several sittings, or machines, as long as all its runs come from
one version of the code: the ledger's first line names that source, and resuming from
other source is refused.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from history.errors import BadInput

LEDGER = "detect-ledger.jsonl"
"""The ledger's name in a detect's runs directory, unless `--ledger` puts it elsewhere."""


@dataclass(frozen=True)
class Judged:
    """One judged run, as the tables count it."""

    scenario: str
    seed: int
    mutants: tuple[str, ...]
    """The mutants the run had on: none for a clean twin or a scenario expecting valid."""
    passed: bool
    """The run met its expectation (a mutant run: `invalid` through every named anomaly;
    a run of the explore column, starquake/run/detect_explore.py: `invalid` with mutants
    on, a catch, and `valid` without)."""
    reported: tuple[str, ...] = ()
    """For a run that did not pass: its failed checkers, else the undecided ones; for a run
    of the explore column, whenever it was not valid (a catch keeps its anomalies)."""
    first_anomaly_s: float | None = None
    """For a caught mutant run: seconds from its first event to its first expected anomaly."""
    run: str = ""
    """Where the run's directory was, for a reader who still has it."""

    @property
    def key(self) -> tuple[str, int, tuple[str, ...]]:
        return self.scenario, self.seed, self.mutants


def _record(path: Path, number: int, line: str) -> Judged:
    try:
        fields = json.loads(line)
        return Judged(str(fields["scenario"]), int(fields["seed"]),
                      tuple(map(str, fields["mutants"])), bool(fields["passed"]),
                      tuple(map(str, fields["reported"])),
                      None if fields["first_anomaly_s"] is None
                      else float(fields["first_anomaly_s"]),
                      str(fields["run"]))
    except (ValueError, TypeError, KeyError):
        raise BadInput(f"{path}:{number}: not a run record of a detect ledger") from None


class Ledger:
    """The judged runs of one detect, in the order they were judged, from one source.

    Opening claims the file: a new one gets its header; an existing one is taken only to
    resume, and only when its source is this one (else one table would mix two versions
    of the code, or a fresh start would be counted later as this code's).
    """

    def __init__(self, path: Path, source: str | None, resume: bool) -> None:
        """`source` None opens the ledger read only, whatever code its runs came from
        (`starquake detect --tables-only`): a run it lacks is then an error, not a run
        to make."""
        self.path = path
        self.runs: dict[tuple[str, int, tuple[str, ...]], Judged] = {}
        self.read_only = source is None
        self.source = source or ""
        if not path.exists():
            if source is None:
                raise BadInput(f"{path}: no detect ledger to write the tables from")
            if resume:
                raise BadInput(f"{path}: no detect ledger to resume; start without --resume")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"source": source}) + "\n")
            return
        if not resume and source is not None:
            raise BadInput(f"{path}: already holds a detect's runs; go on with --resume, or "
                           f"start a new --runs-dir or --ledger")
        header, *lines = path.read_text().splitlines() or [""]
        try:
            recorded = json.loads(header)["source"]
        except (ValueError, TypeError, KeyError):
            raise BadInput(f"{path}:1: not a detect ledger's header") from None
        if source is not None and recorded != source:
            raise BadInput(f"{path}: its runs came from {recorded}, this is {source}; resume "
                           f"with the same code, or start a new ledger")
        self.source = recorded
        for number, line in enumerate(lines, start=2):
            if line.strip():
                judged = _record(path, number, line)
                self.runs[judged.key] = judged

    def get(self, scenario: str, seed: int, mutants: tuple[str, ...]) -> Judged | None:
        """The run the ledger holds, or None: it is to be run (read only: an error)."""
        held = self.runs.get((scenario, seed, mutants))
        if held is None and self.read_only:
            raise BadInput(f"{self.path}: no run of {scenario} with seed {seed} and "
                           f"mutants {','.join(mutants) or 'none'}; --tables-only runs "
                           f"nothing")
        return held

    def add(self, judged: Judged) -> None:
        """Record a judged run for good before it is counted: an interrupted detect keeps
        every run it judged."""
        assert not self.read_only, "a read-only ledger is never run into"
        with self.path.open("a") as ledger:
            ledger.write(json.dumps(asdict(judged)) + "\n")
            ledger.flush()
            os.fsync(ledger.fileno())
        self.runs[judged.key] = judged
