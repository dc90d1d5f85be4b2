"""Two values at one position: a log that forked, e.g. two owners writing one ledger."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.anomaly import CheckSettings, anomalies
from checkers.frames import HistoryFrames
from checkers.partitions import (
    CODED_TEXT,
    Scan,
    TextCodes,
    columns,
    decide,
    gather,
    rows,
    scatter_scans,
    several_values,
)
from checkers.views import OBSERVATIONS_FILE, RECVS, SENDS

_EXAMPLE_VALUES = 4
_EXAMPLE_EVENTS = 6
_PLACE = ["run", "topic", "place_cluster", "seg", "position"]
_PLACED = pa.schema([
    ("run", pa.string()), ("topic", pa.string()), ("place_cluster", pa.string()),
    ("seg", pa.int64()), ("position", pa.string()), ("value", pa.string()),
    ("index", pa.int64())])
_REPEATING = ("run", "f", "type", "done_type", "topic")
"""The columns read as dictionaries (`Scan.read`): the views' filters, and the place's
texts that repeat on most rows (`cluster` is made non-null, which decodes it)."""
_SHUFFLED = pa.schema([f.with_type(CODED_TEXT)
                       if f.name in _REPEATING else f for f in _PLACED])
"""`_PLACED` as the map tasks send it, its repeating texts coded."""
_FORKS = pa.schema([
    ("run", pa.string()), ("topic", pa.string()), ("place_cluster", pa.string()),
    ("seg", pa.int64()), ("position", pa.string()), ("some_values", pa.list_(pa.string())),
    ("idx", pa.list_(pa.int64()))])


def forked_position(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    """Positions where sends acknowledged, or deliveries seen, name different values.
    A position is per (topic, cluster, segment); batched messages carry their batch index
    as a third component, so they do not collide. One shuffle by position; each
    partition counts the distinct values per position, and only the forked ones gather
    their examples."""
    tasks = frames.scans()
    placed = gather([scatter_scans(frames.spark, tasks, _placed, "position",
                                   frames.partitions)], frames.partitions)
    forks = decide(placed, _forks, _FORKS)
    return anomalies("forked-position", forks.withColumn("first", F.get(F.col("idx"), 0)),
                     "first", [F.get(F.col("idx"), i) for i in range(_EXAMPLE_EVENTS)],
                     topic="topic", position="position", segment="seg",
                     cluster="place_cluster", values="some_values")


def _placed(scan: Scan) -> pa.Table:
    """A map task's messages where they were written (sends acknowledged with a
    position: `index` the completion's) or seen (deliveries with one)."""
    if scan.file == OBSERVATIONS_FILE:
        names = ["run", "topic", "cluster", "seg", "position", "value", "index"]
        placed = RECVS.table(scan.read(RECVS.reads(names), _REPEATING), names)
        placed = placed.filter(pc.is_valid(placed["position"]))
    else:
        names = ["run", "topic", "cluster", "segment", "position", "value", "done_index",
                 "outcome"]
        sends = SENDS.table(scan.read(SENDS.reads(names), _REPEATING), names)
        placed = sends.filter(pc.and_(pc.equal(sends["outcome"], "ok"),
                                      pc.is_valid(sends["position"])))
        placed = placed.rename_columns({"done_index": "index"}).set_column(
            names.index("segment"), "seg", pc.coalesce(placed["segment"], -1))
    return rows(_SHUFFLED, placed.num_rows, **columns(placed),
                place_cluster=pc.coalesce(placed["cluster"], ""))


def _forks(placed: pa.Table) -> pa.Table:
    """Each position with two or more values: its first values and events, in order."""
    codes = TextCodes(placed, [*_PLACE, "value"])
    forked = several_values(codes.table, _PLACE, "value")
    forks = codes.decode(codes.table.join(forked, _PLACE, join_type="left semi"), _PLACED)
    examples = forks.group_by(_PLACE).aggregate([("value", "distinct"), ("index", "distinct")])

    def first(column: str, count: int, field: str) -> pa.Array:
        return pa.array([sorted(v for v in values if v is not None)[:count]
                         for values in examples[column].to_pylist()], _FORKS.field(field).type)

    return rows(_FORKS, examples.num_rows, **{c: examples[c] for c in _PLACE},
                some_values=first("value_distinct", _EXAMPLE_VALUES, "some_values"),
                idx=first("index_distinct", _EXAMPLE_EVENTS, "idx"))
