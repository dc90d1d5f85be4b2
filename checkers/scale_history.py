"""A run's history in k copies: what a real run recorded, made as large as a benchmark
needs (`starquake bench check --from-run`), without changing what the checkers find in it.

Each copy is the run again, side by side with the others: its events interleave with
theirs event by event (the original's event i is written k times in a row, once per copy,
before event i + 1), at the original's times, and `index` counts the result's rows. So
every comparison the checkers make between two events of one copy (by index or by time)
comes out as it did in the original, and the copies must only be kept from meeting.
They meet wherever the checkers group events by a name two copies would share, so each
copy gets names of its own, made by a tag (`c<copy>-`) put in front of the name, or after
`://` in a full topic name (its tenant, `persistent://c2-public/default/t`):

- `topic`: most checkers judge per topic, and positions, segments, layouts and keys are
  scoped by their topic, so they stay as they are;
- `value`: message ids are unique in a run, and `unexpected` and `failed-delivered` match
  them across topics; other operations' values name a subscription (`subscribe`,
  `failover`, `cursor`), a consumer (`register`), a topic (`drain`) or a broker
  (`health`), and take the same tag, so they still name it;
- `subscription`: a `failover` without a topic moves a subscription of that name on
  every topic;
- `process`: an invoke is paired with its process's next event, and the copies' events
  of one process would otherwise alternate (`admin` and `harness` are tagged too);
- `consumer`: `reassigned` follows each consumer's sessions;
- in `detail`: full topic names, and the names under `broker` (a `health` reading:
  `zombie-broker` judges each broker's readings in a row, which k copies of one broker's
  readings would merge into one stretch) and `replaces` (a `subscribe`'s consumer).

Keys stay, so that `misrouted` hashes the same key into the same range; so do clusters
and nodes: the copies run on the same clusters. The nemesis's operations and the `meta`
event are written once, untagged: the `nemesis` process may have one operation
outstanding, and every checker that reads a fault (`duplicate-window`'s outages, `lost`'s
unlinked replication) compares it with times and clusters, which every copy shares, so
one fault stands for the same fault in every copy; the `meta` event holds the run's
settings. Everything else is written k times, so each checker's count is k times the
original's.

The copies are written in blocks of rows of the result, each built with Arrow's compute
functions from the original table, so the result may be far larger than memory holds.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from history.reader import HistoryError, find_history, to_parquet
from history.schema import ARROW_SCHEMA

RENAMED = ("topic", "value", "subscription", "process", "consumer")
"""The columns whose names each copy has to itself (see the module's docstring)."""
NAMED_IN_DETAIL = ("broker", "replaces")
"""The members of a `detail` whose text is a name a copy has to itself."""
SHARED_PROCESSES = ("nemesis",)
SHARED_OPERATIONS = ("meta",)
SCHEME = "://"
"""What a full topic name holds before its tenant."""
_CUT = "\x00"
"""Marks where a tag goes while the original's texts are cut: no run names a thing with a
NUL in it, and `write_copies` refuses a history that does."""
_BLOCK = 1 << 20
"""Rows of the result built and written at a time: one row group."""


def copies_for(events: int, original_events: int) -> int:
    """How many copies of a history of `original_events` make at least `events`."""
    return max(1, -(-events // original_events))


def parquet_copy(run: Path, directory: Path) -> Path:
    """The history of `run` (a run directory or a history file, .jsonl or .parquet) as
    Parquet in `directory`: the file is copied there first, so that its conversion, and
    whatever a check derives from it, land there and not beside the run's own."""
    history = find_history(run)
    directory.mkdir(parents=True, exist_ok=True)
    copy = directory / history.name
    shutil.copyfile(history, copy)
    return to_parquet(copy).parquet


def write_copies(original: Path, target: Path, copies: int,
                 renamed: Sequence[str] = RENAMED) -> int:
    """Write `copies` copies of the Parquet history `original` to `target` as one
    history; the number of events written. `renamed` are the columns tagged per copy."""
    events = pq.read_table(original, columns=ARROW_SCHEMA.names).cast(ARROW_SCHEMA)
    for name in [*renamed, "detail"]:
        if pc.any(pc.match_substring(events[name], _CUT)).as_py():
            raise HistoryError(f"{original}: a {name} holds a NUL character, which the "
                               "copies' names cannot be cut at")
    parts = {name: _name_parts(events[name]) for name in renamed}
    parts["detail"] = _detail_parts(events["detail"])
    shared = _shared(events)
    written = np.where(shared, 1, copies)
    starts = np.cumsum(written) - written
    total = int(written.sum())
    with pq.ParquetWriter(target, ARROW_SCHEMA) as writer:
        for start in range(0, total, _BLOCK):
            rows = np.arange(start, min(start + _BLOCK, total), dtype=np.int64)
            writer.write_table(_block(events, parts, shared, starts, rows))
    return total


def _shared(events: pa.Table) -> npt.NDArray[np.bool_]:
    """Per event, whether it is written once for all copies."""
    once = pc.or_(pc.is_in(events["process"], pa.array(SHARED_PROCESSES)),
                  pc.is_in(events["f"], pa.array(SHARED_OPERATIONS)))
    return np.asarray(pc.fill_null(once, False).to_numpy(zero_copy_only=False), dtype=bool)


def _name_parts(names: pa.ChunkedArray) -> pa.ChunkedArray:
    """Each name cut where a copy's tag goes: after the scheme of a full topic name (so
    the topic keeps its form, in a tenant of the copy's own), else in front."""
    full_topic = pc.match_substring(names, SCHEME)
    return _cut(pc.if_else(full_topic, _marked_after(names, SCHEME),
                           pc.binary_join_element_wise(_CUT, names, "")))


def _detail_parts(details: pa.ChunkedArray) -> pa.ChunkedArray:
    """Each `detail` cut where a copy's tag goes: after the scheme of every full topic
    name in it, and in front of the text of the NAMED_IN_DETAIL members, in either
    spelling JSON writers use (a space after the colon, or none)."""
    for marker in [SCHEME, *(f'"{member}":{space}"' for member in NAMED_IN_DETAIL
                             for space in ("", " "))]:
        details = _marked_after(details, marker)
    return _cut(details)


def _marked_after(texts: pa.ChunkedArray, marker: str) -> pa.ChunkedArray:
    """Each text with a cut mark after every `marker` in it."""
    return pc.replace_substring(texts, marker, marker + _CUT)


def _cut(marked: pa.ChunkedArray) -> pa.ChunkedArray:
    """The texts in pieces at each cut mark; joined with nothing between, the original."""
    return pc.split_pattern(marked, _CUT)


def _block(events: pa.Table, parts: dict[str, pa.ChunkedArray],
           shared: npt.NDArray[np.bool_], starts: npt.NDArray[np.int64],
           rows: npt.NDArray[np.int64]) -> pa.Table:
    """Rows `rows` of the result. Row r copies the last event of the original whose first
    row (`starts`) is at or before r, and is that event's copy number r minus its first
    row; a shared event's names are joined without a tag, as they were."""
    source = np.searchsorted(starts, rows, side="right") - 1
    taken = pa.array(source)
    tags = pc.if_else(pa.array(shared[source]), "", _tags(rows - starts[source]))
    columns = {name: pc.binary_join(parts[name].take(taken), tags) if name in parts
               else events[name].take(taken) for name in ARROW_SCHEMA.names}
    columns["index"] = pa.array(rows)
    return pa.table(columns, schema=ARROW_SCHEMA)


def _tags(copy: npt.NDArray[np.int64]) -> pa.Array:
    """Each row's copy as the tag its names take: `c0-`, `c1-`, ..."""
    return pc.binary_join_element_wise("c", pc.cast(pa.array(copy), pa.string()), "-", "")
