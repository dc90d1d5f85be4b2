"""Check-safe, as Jepsen's `check-safe`: a checker that raises is unknown, with its error in
its result, and the other checkers still judge.

A check plans every finder once (however many checkers share it) and collects all their
anomaly rows in one Spark job. A finder can fail in two places: while it is planned (its
driver code, the jobs planning runs, a finder that cannot be imported), which fails the
checkers it decides and leaves it out of the job; or only when the job runs (its
executors' code), which fails the one job. That job is then run again once per finder,
so that only the failing finder's checkers fail: the normal path stays one job, and the
extra jobs are spent only on a check that already failed. Checkers that share a finder
share its fate (one pass decides them all).

An interrupt (`KeyboardInterrupt`) is not a checker's failure: it ends the check.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial, reduce
from typing import Any, TypeVar

from pyspark.sql import DataFrame, Row

from checkers.anomaly import CheckSettings
from checkers.frames import HistoryFrames
from checkers.registry import Checker

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass(frozen=True)
class CheckerFailure:
    """Why a checker could not judge: its exception's type and message."""

    type: str
    message: str

    @classmethod
    def of(cls, error: Exception) -> CheckerFailure:
        return cls(type(error).__name__, str(error).strip())

    def result(self) -> dict[str, Any]:
        """The checker's entry in `results.json`: unknown, with the error."""
        return {"valid": "unknown", "count": 0, "examples": [],
                "error": {"type": self.type, "message": self.message}}


def attempt(what: str, call: Callable[[], T]) -> T | CheckerFailure:
    """`call`'s answer, or the failure it raised (logged with its traceback)."""
    try:
        return call()
    except Exception as error:
        log.warning("%s failed", what, exc_info=True)
        return CheckerFailure.of(error)


@dataclass(frozen=True)
class Findings:
    rows: list[Row]
    """Every row `collect` kept of the finders that did not fail."""
    failures: dict[str, CheckerFailure]
    """By checker: those whose finder failed."""


def find_all(checkers: Iterable[Checker], frames: HistoryFrames, settings: CheckSettings,
             collect: Callable[[DataFrame], list[Row]]) -> Findings:
    """Plan each finder of `checkers` once and `collect` the union of their rows in one
    job (see the module's docstring for what a failure costs)."""
    sharing: dict[str, list[str]] = defaultdict(list)
    finders: dict[str, Checker] = {}
    for checker in checkers:
        sharing[checker.entry.finder].append(checker.name)
        finders.setdefault(checker.entry.finder, checker)
    failures: dict[str, CheckerFailure] = {}
    planned: dict[str, DataFrame] = {}
    for reference, checker in finders.items():
        found = attempt(f"finder {reference}", partial(_plan, checker, frames, settings))
        if isinstance(found, CheckerFailure):
            failures.update(dict.fromkeys(sharing[reference], found))
        else:
            planned[reference] = found
    if not planned:
        return Findings([], failures)
    together = attempt("the anomaly job (run again finder by finder)", partial(
        collect, reduce(DataFrame.unionByName, planned.values())))
    if not isinstance(together, CheckerFailure):
        return Findings(together, failures)
    rows: list[Row] = []
    for reference, found in planned.items():
        alone = attempt(f"finder {reference}", partial(collect, found))
        if isinstance(alone, CheckerFailure):
            failures.update(dict.fromkeys(sharing[reference], alone))
        else:
            rows.extend(alone)
    return Findings(rows, failures)


def _plan(checker: Checker, frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    """The finder's rows, planned; looking the finder up is part of it (it may fail)."""
    return checker.finder(frames, settings)
