"""Cumulative acknowledgements: from when each delivered message counted as acknowledged.

A cumulative ack of message m in subscription S (in one cluster) acknowledges every
message of S at or below the position m was delivered at, in m's segment (or topic, where
there are no segments), and the highest position so acknowledged only grows. A delivery
at position p therefore counts as acknowledged from the earliest cumulative ack at which
that highest position reached p: what `duplicate`, `duplicate-window` and `ack-unapplied`
need of cumulative acks (docs/history.md).

Two steps find it without gathering every delivery of a subscription in one task:

1. **Marks.** The cumulative acks, a small share of the acks, were set apart by the
   pairing pass (`checkers.pairing`) in a file beside the deliveries; each task that reads
   deliveries reads that file too (in the runs that have any) and joins its own deliveries
   to it, which gives the positions each ack acknowledged with no shuffle: only the marks
   come back to the driver.
2. **Frontiers.** The driver sorts the marks of each subscription, cluster and segment in
   ack order and keeps those that raised the highest position: the frontier, strictly
   rising in position and in ack. The first frontier entry at or above a position is the
   ack that covered it. Frontiers hold at most one entry per cumulative ack. Each run's
   are written beside its paired files (`FRONTIERS_FILE`), and every partition of the
   per-value pass reads them there, where each delivery finds its covering ack with one
   sort of the partition's deliveries and the frontiers.

Both tables reach the tasks as files, by path, like the history itself, and each Python
worker keeps the last ones it read (`_kept`): every Spark the checkers run on reads the
paired files already (a cluster through a shared directory). Captured in the tasks'
function instead, a table would travel with every task through a Spark Connect server,
which has no broadcast variables and hands each task's Python worker the whole pickled
function: at 2M events of long values, 33 MB of cumulative acks per task.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql.pandas.types import from_arrow_schema

from checkers.frames import ACK_SCOPE, HistoryFrames
from checkers.pairing import CUMULATIVE_ACKS_FILE, CUMULATIVE_ACKS_SCHEMA
from checkers.partitions import Scan, map_scans
from checkers.views import OBSERVATIONS_FILE, RECVS
from history.partial import temporary_beside

COVERED = pa.schema([*(pa.field(name, pa.string()) for name in ACK_SCOPE),
                     ("value", pa.string()), ("ack_index", pa.int64()),
                     ("ack_time", pa.int64())])
"""A delivered value, and the cumulative ack that covered it in its scope."""

_PLACE = [*ACK_SCOPE, "segment"]
"""Where positions compare: a subscription of a topic in one cluster, and the segment."""
_KEYS = [*ACK_SCOPE, "value"]
_ACKED = pa.schema([*(pa.field(name, pa.string()) for name in _KEYS),
                    ("ack_index", pa.int64()), ("ack_time", pa.int64())])
FRONTIERS_FILE = "frontiers.arrow"
"""A run's frontiers (Arrow IPC), written beside its paired files by each check that needs
them: derived from those files alone, so a check of the same history writes the same."""
_T = TypeVar("_T")
_MARKS = pa.schema([*(pa.field(name, pa.string()) for name in ACK_SCOPE),
                    ("segment", pa.int64()), ("position", pa.string()),
                    ("ack_index", pa.int64()), ("ack_time", pa.int64())])


@dataclass(frozen=True)
class Frontiers:
    """Every frontier, one after another: `places` names each frontier's place (its
    `_PLACE` joined as text), and entry i belongs to place `place[i]`; within a place the
    entries rise in position (`ledger`, `entry`, `batch`) and in ack."""

    places: pa.Array
    subscriptions: pa.Array
    """Every subscription a place names: the deliveries of others are never covered."""
    place: np.ndarray
    ledger: np.ndarray
    entry: np.ndarray
    batch: np.ndarray
    ack_index: np.ndarray
    ack_time: np.ndarray


def frontiers(frames: HistoryFrames) -> tuple[str, ...]:
    """Where the frontiers of every run that had a cumulative ack are written (one file
    per run, for `load_frontiers`); none without any."""
    if not frames.cumulative_ack_runs:
        return ()
    tasks = [task for task in frames.scans() if task.run in frames.cumulative_ack_runs
             and task.file == OBSERVATIONS_FILE]
    marks = map_scans(frames.spark, tasks, lambda task: _marks(task).to_batches(),
                      from_arrow_schema(_MARKS)).toArrow()
    # A message delivered at one position in two tasks' rows gives that mark twice.
    marks = marks.group_by(_MARKS.names).aggregate([])
    written = []
    for run in sorted(frames.cumulative_ack_runs):
        path = frames.paired[run] / FRONTIERS_FILE
        write_frontiers(frontiers_of(marks.filter(pc.equal(marks["run"], run))), path)
        written.append(str(path.resolve()))
    return tuple(written)


def load_frontiers(paths: tuple[str, ...]) -> Frontiers:
    """The frontiers `frontiers` wrote, as one."""
    return _kept(_read_frontiers, paths)


def write_frontiers(found: Frontiers, path: Path) -> None:
    """`found` at `path`, whole or not at all (two checks of one history may write it at
    once, the same content)."""
    table = pa.table({
        "place": pa.DictionaryArray.from_arrays(pa.array(found.place, pa.int32()),
                                                found.places),
        **{name: pa.array(getattr(found, name), pa.int64())
           for name in ["ledger", "entry", "batch", "ack_index", "ack_time"]}},
        metadata={"subscriptions": json.dumps(found.subscriptions.to_pylist())})
    temporary = temporary_beside(path)
    with pa.OSFile(str(temporary), "wb") as sink, pa.ipc.new_file(sink, table.schema) as out:
        out.write_table(table)
    temporary.replace(path)


def _read_frontiers(paths: tuple[str, ...]) -> Frontiers:
    tables = [pa.ipc.open_file(pa.memory_map(path)).read_all() for path in paths]
    subscriptions = sorted({name for table in tables
                            for name in json.loads(table.schema.metadata[b"subscriptions"])})
    table = pa.concat_tables([t.replace_schema_metadata(None) for t in tables])
    place = table.unify_dictionaries()["place"].combine_chunks()

    def numbers(name: str) -> np.ndarray:
        return np.asarray(table[name].to_numpy())

    return Frontiers(place.dictionary, pa.array(subscriptions, pa.string()),
                     np.asarray(place.indices.to_numpy(zero_copy_only=False)),
                     numbers("ledger"), numbers("entry"), numbers("batch"),
                     numbers("ack_index"), numbers("ack_time"))


def _kept(read: Callable[[tuple[str, ...]], _T], paths: tuple[str, ...]) -> _T:
    """`read(paths)`, kept by this Python worker while the files stay as they were: a
    worker serves many tasks of one check, and each would otherwise read them again."""
    stats = [os.stat(path) for path in paths]
    stamps = tuple((stat.st_mtime_ns, stat.st_size) for stat in stats)
    return _kept_read(read, paths, stamps)  # type: ignore[return-value]


@lru_cache(maxsize=4)
def _kept_read(read: Callable[[tuple[str, ...]], object], paths: tuple[str, ...],
               stamps: tuple[tuple[int, int], ...]) -> object:
    del stamps  # part of the key only: a file rewritten is read again
    return read(paths)


def _cumulative_acks(paths: tuple[str, ...]) -> pa.Table:
    """A run's cumulative acks, which the pairing pass set apart (`paths`: its file)."""
    (path,) = paths
    return pq.read_table(path, schema=CUMULATIVE_ACKS_SCHEMA)


def _marks(scan: Scan) -> pa.Table:
    """Each cumulative ack with every position its message was delivered at in this map
    task's deliveries, in its scope. (A null in a key matches nothing, as in SQL.)"""
    acks = _kept(_cumulative_acks, (str(Path(scan.path).parent / CUMULATIVE_ACKS_FILE),))
    acked = acks.add_column(0, "run", pa.repeat(pa.scalar(scan.run), acks.num_rows)
                            ).cast(_ACKED)
    names = [*_KEYS, "seg", "position"]
    recvs = RECVS.table(scan.read(RECVS.reads(names)), names)
    # Most deliveries are of messages no cumulative ack names: drop them before the join.
    recvs = recvs.filter(pc.and_(pc.is_valid(recvs["position"]),
                                 pc.is_in(recvs["value"],
                                          value_set=acked["value"].combine_chunks())))
    places = recvs.group_by([*_KEYS, "seg", "position"]).aggregate([])
    marks = acked.join(places, _KEYS, join_type="inner")
    return marks.rename_columns(["segment" if n == "seg" else n for n in marks.column_names]
                                ).select(_MARKS.names).cast(_MARKS)


def _place_text(table: pa.Table) -> pa.ChunkedArray:
    """`_PLACE` as one text per row (null where any part is)."""
    return pc.binary_join_element_wise(
        *[table[name].cast(pa.string()) for name in _PLACE], "\x1f")


def _parts(positions: pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                 np.ndarray]:
    """`ledgerId:entryId[:batchIndex]` as ledger, entry and batch arrays (a missing batch
    is -1, the way positions order), and whether each text was a position at all."""
    text = pc.fill_null(positions.combine_chunks(), "")
    valid = pc.match_substring_regex(text, _POSITION)
    text = pc.if_else(valid, text, "0:0")
    text = pc.if_else(pc.match_substring_regex(text, "^[^:]*:[^:]*$"),
                      pc.binary_join_element_wise(text, "-1", ":"), text)
    pieces = pc.split_pattern(text, ":")

    def part(n: int) -> np.ndarray:
        return np.asarray(pc.cast(pc.list_element(pieces, n), pa.int64()).to_numpy(
            zero_copy_only=False))

    return part(0), part(1), part(2), np.asarray(valid.to_numpy(zero_copy_only=False))


_POSITION = r"^-?[0-9]+:-?[0-9]+(:-?[0-9]+)?$"


def frontiers_of(marks: pa.Table) -> Frontiers:
    """Per place, the marks in ack order that raised the highest position so far."""
    ledger, entry, batch, valid = _parts(marks["position"])
    places = pc.dictionary_encode(_place_text(marks).combine_chunks())
    if not marks.num_rows:
        nothing = np.zeros(0, np.int64)
        return Frontiers(places.dictionary, pa.array([], pa.string()), nothing, nothing,
                         nothing, nothing, nothing, nothing)
    place = np.asarray(places.indices.to_numpy(zero_copy_only=False))
    ack_index = marks["ack_index"].to_numpy()
    ack_time = marks["ack_time"].to_numpy()
    keep = valid & ~pc.is_null(places.indices).to_numpy(zero_copy_only=False)
    place, ledger, entry, batch = place[keep], ledger[keep], entry[keep], batch[keep]
    ack_index, ack_time = ack_index[keep], ack_time[keep]
    # Positions as ranks, so that one running maximum per place does (offset per place).
    _, rank = np.unique(np.stack([ledger, entry, batch], axis=1), axis=0, return_inverse=True)
    rank = rank.reshape(-1).astype(np.int64)
    in_ack_order = np.lexsort((ack_index, place))
    place, rank = place[in_ack_order], rank[in_ack_order]
    span = int(rank.max(initial=0)) + 1
    offset = place.astype(np.int64) * span
    highest = np.maximum.accumulate(offset + rank) - offset
    first_of_place = np.r_[True, place[1:] != place[:-1]]
    raised = first_of_place | (highest > np.r_[-1, highest[:-1]])
    taken = in_ack_order[raised]
    return Frontiers(places.dictionary, pc.unique(marks["subscription"].combine_chunks()),
                     place[raised], ledger[taken], entry[taken],
                     batch[taken], ack_index[taken], ack_time[taken])


def covered(recvs: pa.Table, found: Frontiers) -> pa.Table:
    """`COVERED`: each delivery in `recvs` (`_PLACE`, `value`, `position`) at or below
    its place's frontier, with the frontier's first entry at or above its position."""
    # Most deliveries are in subscriptions no cumulative ack was made in: set aside first,
    # as joining and parsing their texts is the costly part.
    recvs = recvs.filter(pc.is_in(recvs["subscription"], value_set=found.subscriptions))
    place = pc.index_in(_place_text(recvs), value_set=found.places)
    ledger, entry, batch, valid = _parts(recvs["position"])
    asked = valid & pc.is_valid(place).to_numpy(zero_copy_only=False)
    recvs = recvs.filter(pa.array(asked))
    place = np.asarray(pc.fill_null(place, 0).to_numpy(zero_copy_only=False))[asked]
    ledger, entry, batch = ledger[asked], entry[asked], batch[asked]
    frontier = len(found.place)
    # The frontier and the deliveries in one order: by place, then position, a delivery
    # before a frontier entry at the same position; each delivery's covering entry is
    # the first frontier entry after it, if it is of the same place.
    is_entry = np.r_[np.ones(frontier, bool), np.zeros(len(place), bool)]
    in_order = np.lexsort((is_entry, np.r_[found.batch, batch], np.r_[found.entry, entry],
                           np.r_[found.ledger, ledger], np.r_[found.place, place]))
    sentinel = len(in_order)
    next_entry = np.minimum.accumulate(
        np.where(is_entry[in_order], np.arange(sentinel), sentinel)[::-1])[::-1]
    where = np.empty(sentinel, np.int64)
    where[in_order] = np.arange(sentinel)
    after = next_entry[where[frontier:]]
    entry_row = in_order[np.minimum(after, sentinel - 1)]
    hit = (after < sentinel) & (np.r_[found.place, place][entry_row] == place)
    chosen = entry_row[hit]
    recvs = recvs.filter(pa.array(hit))
    return pa.table([*(recvs[name].cast(pa.string()) for name in ACK_SCOPE), recvs["value"],
                     pa.array(found.ack_index[chosen], pa.int64()),
                     pa.array(found.ack_time[chosen], pa.int64())], schema=COVERED)
