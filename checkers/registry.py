"""The checkers declared in `history.checker_registry`, bound to their finders.

The declarations name each finder as `module:function` (the history may not import the
checkers); here the names become the functions. A name is looked up each time a check
needs it, inside that check's guard (`checkers.safe`): an entry whose finder cannot be
imported fails its own checkers, not the check. A check reads the registry when it
starts, so an entry added to it (a test's throwaway checker) is judged like the others.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import cast

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.anomaly import CheckSettings, Finder
from checkers.frames import HistoryFrames
from history import checker_registry
from history.checker_registry import CheckerEntry

JudgedRuns = Callable[[HistoryFrames, CheckSettings], Collection[str]]
"""The runs an optional checker judges."""


@dataclass(frozen=True)
class Checker:
    """A registry entry, its functions looked up where they are used (see the module's
    docstring)."""

    entry: CheckerEntry

    @property
    def name(self) -> str:
        return self.entry.name

    @property
    def finder(self) -> Finder:
        return cast(Finder, resolve(self.entry.finder))

    @property
    def judges(self) -> JudgedRuns | None:
        """The runs an optional checker judges; None: every run."""
        if self.entry.judges is None:
            return None
        return cast(JudgedRuns, resolve(self.entry.judges))

    def find(self, frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
        """This checker's anomalies alone (its finder may decide others in the same pass)."""
        return self.finder(frames, settings).filter(F.col("checker") == self.name)


def registered() -> tuple[Checker, ...]:
    """Every checker of the registry as it stands, in the verdict's order."""
    return tuple(Checker(entry) for entry in checker_registry.CHECKERS)


def resolve(reference: str) -> Callable[..., object]:
    """The function a `module:function` reference names."""
    module, _, function = reference.partition(":")
    found = getattr(importlib.import_module(module), function, None)
    if not callable(found):
        raise LookupError(f"{reference}: the module has no function {function!r}")
    return cast(Callable[..., object], found)
