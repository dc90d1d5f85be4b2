"""`starquake reproduce RUN`: run a run again from what its directory holds.

The directory has the scenario as it was run (`scenario.toml`: seed, backend and mutants
written out) and the history, whose nemesis operations name the nodes each fault actually
hit. The seed alone fixes every fault's kind, time and planned targets, but `owner` and
`controller-leader` are resolved when the fault strikes, and ownership moves; so the
replay aims each fault at the node it hit the first time (`Schedule.pinned`).
"""

from __future__ import annotations

from pathlib import Path

import orjson

from history.errors import BadInput
from nemesis.faults import FAULTS
from starquake.run.pipeline import RunOptions

SCENARIO_FILE = "scenario.toml"
HISTORY_FILE = "history.jsonl"
BEGIN_OPS = frozenset(fault.op for fault in FAULTS.values())
"""The operations that begin a fault (their ends and the final heal are not replayed:
they follow from the schedule)."""


class NotARun(BadInput):
    """RUN is not a run directory starquake wrote."""


def replay_options(run_dir: Path, runs_dir: Path | None) -> RunOptions:
    """The options that repeat the run in `run_dir`: its own scenario copy and seed, and
    the nodes its faults hit; the new run goes beside it unless `runs_dir` says where."""
    run_dir = run_dir.resolve()  # runs/latest is a link
    scenario = run_dir / SCENARIO_FILE
    history = run_dir / HISTORY_FILE
    for needed in (scenario, history):
        if not needed.is_file():
            raise NotARun(f"{run_dir}: not a run directory (no {needed.name})")
    seed = _recorded_seed(history)
    return RunOptions(scenario, seed=seed, runs_dir=runs_dir or run_dir.parent.parent,
                      fault_targets=faults_hit(history))


def faults_hit(history: Path) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each fault's operation and the nodes it was aimed at, in the order they began (a
    torn last line, from a run cut short, ends the list)."""
    hit = []
    with history.open("rb") as lines:
        for line in lines:
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                break
            if (event.get("process") == "nemesis" and event.get("type") == "invoke"
                    and event.get("f") in BEGIN_OPS):
                targets = orjson.loads(event.get("detail") or "{}").get("targets", [])
                hit.append((event["f"], tuple(targets)))
    return tuple(hit)


def _recorded_seed(history: Path) -> int:
    """The seed in the history's first event, the `meta` observation."""
    with history.open("rb") as lines:
        first = lines.readline()
    try:
        meta = orjson.loads(first)
        return int(orjson.loads(meta["detail"])["seed"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        raise NotARun(f"{history}:1: not a run's meta event (no seed)") from None
