"""Per-partition work in Spark's Python workers, shuffled as Arrow tables.

The finders that compare many events of one value, one key or one position bring those
events together once, then decide each partition as a whole with Arrow's vectorised joins
and aggregates (a Python worker per core). The rows never become Spark rows: a map task
(a Python worker) reads row groups of a paired file itself (`Scan`), or takes a Spark
frame's batches, and cuts the rows into one Arrow IPC stream per target partition; Spark
only moves those payloads (`partition`, `payload`) through its own shuffle, so any master
works, and the reducing worker reads them back as one table. Converting rows between the
JVM and Arrow cost more than the rest of these finders' work together (docs/performance.md).

A row's partition is a hash of one text or integer column (`by`): any column that all of
a group's rows share will do, since a partition may hold many groups.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass
from functools import reduce
from pathlib import Path

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

PartitionFinder = Callable[[pa.Table], pa.Table]
"""Everything a partition proves, as rows of the finder's output schema."""

ROWS_PER_SCAN = 1 << 20
"""About how many rows of a paired file one map task reads (whole row groups)."""

_PAYLOADS = "partition int, payload binary"
_PAYLOAD_OPTIONS = pa.ipc.IpcWriteOptions(compression="zstd")
"""Payloads are compressed where they are cut: their text columns repeat (a topic's name on
every row), so Spark moves a fifth of the bytes, and compressing them costs the worker
less than copying them whole into the stream did."""
_HASHED_BYTES = 64
CODED_TEXT = pa.dictionary(pa.int32(), pa.string())
"""Text as `Scan.read` gives the columns it reads as dictionaries."""


@dataclass(frozen=True)
class Scan:
    """One map task: some row groups of one run's paired file."""

    run: str
    file: str
    path: str
    row_groups: tuple[int, ...]

    def read(self, columns: list[str], repeating: Collection[str] = ()) -> pa.Table:
        """The columns (less `run`) of these row groups, and `run`; those of them named
        in `repeating` as Arrow dictionaries (`run` one entry, the others as the file
        stores them), which are cheaper to read, reorder and shuffle than text that
        repeats on most rows, and which `TextCodes` takes as they are."""
        read = [c for c in columns if c != "run"]
        table = pq.ParquetFile(self.path, read_dictionary=[
            c for c in read if c in repeating]).read_row_groups(list(self.row_groups),
                                                                columns=read)
        if "run" in repeating:
            run: pa.Array = pa.DictionaryArray.from_arrays(
                np.zeros(table.num_rows, np.int32), pa.array([self.run]))
        else:
            run = pa.repeat(pa.scalar(self.run), table.num_rows)
        return table.append_column("run", run)


def scans(paths: dict[str, Path], file: str) -> list[Scan]:
    """Map tasks covering `file` of each run (`paths`: run -> its paired directory)."""
    tasks = []
    for run, directory in paths.items():
        path = directory / file
        metadata = pq.ParquetFile(path).metadata
        group: list[int] = []
        rows = 0
        for index in range(metadata.num_row_groups):
            group.append(index)
            rows += metadata.row_group(index).num_rows
            if rows >= ROWS_PER_SCAN or index == metadata.num_row_groups - 1:
                tasks.append(Scan(run, file, str(path.resolve()), tuple(group)))
                group, rows = [], 0
    return tasks


def map_scans(spark: SparkSession, tasks: list[Scan],
              each: Callable[[Scan], Iterable[pa.RecordBatch]],
              schema: str | StructType) -> DataFrame:
    """Each task's batches (`each`, run by a Python worker), as Spark rows of `schema`:
    one Spark task per scan."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for task in batch.column(0).to_pylist():
                yield from each(tasks[task])

    return spark.range(0, len(tasks), 1, max(1, len(tasks))).mapInArrow(run, schema)


def scatter_scans(spark: SparkSession, tasks: list[Scan], read: Callable[[Scan], pa.Table],
                  by: str, partitions: int) -> DataFrame:
    """Each task's rows (`read`), cut into payloads by `by` for `gather`."""
    return map_scans(spark, tasks, lambda task: _cut(read(task), by, partitions), _PAYLOADS)


def gather(scattered: list[DataFrame], partitions: int) -> DataFrame:
    """Spark's shuffle of the payloads: each to its partition."""
    return reduce(DataFrame.unionByName, scattered).repartitionById(partitions, "partition")


def decide(gathered: DataFrame, find: PartitionFinder, schema: pa.Schema) -> DataFrame:
    """`find` over each whole partition (skipping empty ones), as Spark rows of `schema`."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = _received(batches)
        if table is not None:
            yield from find(table).to_batches()

    return gathered.mapInArrow(run, from_arrow_schema(schema))


def decide_and_scatter(gathered: DataFrame, find: PartitionFinder, by: str,
                       partitions: int) -> DataFrame:
    """`find` over each whole partition, its output cut into payloads by `by` for the next
    `gather`: a second pass by another column with no Spark rows in between."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        table = _received(batches)
        if table is not None:
            yield from _cut(find(table), by, partitions)

    return gathered.mapInArrow(run, _PAYLOADS)


def _received(batches: Iterator[pa.RecordBatch]) -> pa.Table | None:
    tables = [pa.ipc.open_stream(payload.as_buffer()).read_all()
              for batch in batches for payload in batch.column("payload")]
    return pa.concat_tables(tables) if tables else None


def _cut(table: pa.Table, by: str, partitions: int) -> Iterator[pa.RecordBatch]:
    """The table as one IPC stream per target partition, all in one buffer."""
    if not table.num_rows:
        return
    target = (_hash(table[by]) % np.uint64(partitions)).astype(np.int32)
    order = np.argsort(target, kind="stable")
    targets = target[order]
    starts = np.flatnonzero(np.r_[True, targets[1:] != targets[:-1]])
    ends = np.r_[starts[1:], len(targets)]
    grouped = table.take(pa.array(order))
    sink = pa.BufferOutputStream()
    offsets = [0]
    for start, end in zip(starts, ends):
        with pa.ipc.new_stream(sink, table.schema, options=_PAYLOAD_OPTIONS) as writer:
            writer.write_table(grouped.slice(start, end - start))
        offsets.append(sink.tell())
    payloads = pa.Array.from_buffers(pa.binary(), len(starts), [
        None, pa.py_buffer(np.array(offsets, np.int32)), sink.getvalue()])
    yield pa.record_batch([pa.array(targets[starts]), payloads], names=["partition", "payload"])


def _hash(column: pa.ChunkedArray) -> np.ndarray:
    """`text_hash` of text; an integer mixed by Fibonacci hashing (null as 0)."""
    if not pa.types.is_integer(column.type):
        return text_hash(column)
    mixed: npt.NDArray[np.uint64] = (pc.fill_null(column, 0).to_numpy().astype(np.uint64)
                                     * np.uint64(0x9E3779B97F4A7C15))
    return mixed ^ (mixed >> np.uint64(32))


def text_hash(column: pa.ChunkedArray) -> np.ndarray:
    """A hash of each text (FNV-1a over its last 64 bytes, and its length), the same in
    every process. Null hashes as the empty text."""
    text = pc.fill_null(column, "").combine_chunks().cast(pa.large_string())
    ends = np.frombuffer(text.buffers()[1], np.int64)[text.offset:text.offset + len(text) + 1]
    data = np.frombuffer(text.buffers()[2] or b"\0", np.uint8)
    lengths = ends[1:] - ends[:-1]
    ends = ends[1:]
    hashed = np.full(len(text), 0xCBF29CE484222325, np.uint64) ^ lengths.astype(np.uint64)
    prime = np.uint64(0x100000001B3)
    for back in range(1, min(int(lengths.max(initial=0)), _HASHED_BYTES) + 1):
        present = lengths >= back
        byte = data[np.where(present, ends - back, 0)].astype(np.uint64)
        hashed = np.where(present, (hashed ^ byte) * prime, hashed)
    return hashed


def columns(table: pa.Table) -> dict[str, pa.ChunkedArray]:
    """A table's columns by name, to hand on to `rows`."""
    return dict(zip(table.column_names, table.columns))


def rows(schema: pa.Schema, length: int,
         **columns: pa.Array | pa.ChunkedArray | str | int) -> pa.Table:
    """A table of `schema` with the given columns (a plain value fills its column; one the
    schema lacks is left out), every other column null."""
    def column(field: pa.Field) -> pa.Array | pa.ChunkedArray:
        given = columns.get(field.name)
        if given is None:
            return pa.nulls(length, field.type)
        if isinstance(given, (str, int)):
            return pa.repeat(pa.scalar(given, field.type), length)
        return given.cast(field.type)

    return pa.table([column(f) for f in schema], schema=schema)


def several_values(coded: pa.Table, keys: list[str], column: str) -> pa.Table:
    """The groups (`keys`) in which `column`, a column of codes (`TextCodes`), takes more
    than one value (nulls aside): those whose least code differs from their greatest,
    which is cheaper to find than counting distinct codes."""
    spread = coded.group_by(keys).aggregate([(column, "min"), (column, "max")])
    return spread.filter(pc.not_equal(spread[f"{column}_min"], spread[f"{column}_max"])
                         ).select(keys)


class TextCodes:
    """A partition's text key columns as int32 codes, one dictionary per column: Arrow's
    joins and aggregates on several text keys run several times faster on integers.
    Nulls stay null, so they still match nothing in a join. A column that arrives as
    Arrow dictionaries keeps their entries (merged into one) as its codes' texts, so a
    code may stand for a text no row of the partition has."""

    def __init__(self, table: pa.Table, names: list[str]) -> None:
        self._dictionaries: dict[str, pa.Array] = {}
        columns = []
        for name in table.column_names:
            column = table[name]
            if name in names:
                combined = column.combine_chunks()
                encoded = (combined if pa.types.is_dictionary(combined.type)
                           else pc.dictionary_encode(combined))
                self._dictionaries[name] = encoded.dictionary
                column = encoded.indices
            columns.append(column)
        self.table = pa.table(columns, names=table.column_names)
        """The partition, coded."""

    def encode(self, table: pa.Table) -> pa.Table:
        """Another table's text in these codes. A text the partition lacks is given a code
        of its own, which no row of the partition has (so it matches none, as a null
        would) and which decodes back to the text (so a finding keeps its name)."""
        return pa.table([self._encoded(name, table[name]) if name in self._dictionaries
                         else table[name] for name in table.column_names],
                        names=table.column_names)

    def _encoded(self, name: str, column: pa.ChunkedArray | pa.Array) -> pa.Array:
        known = self._dictionaries[name]
        foreign = pc.unique(pc.drop_null(pc.filter(
            column, pc.invert(pc.is_in(column, value_set=known)))))
        if len(foreign):
            known = pa.concat_arrays([known, foreign.cast(known.type)])
            self._dictionaries[name] = known
        return pc.index_in(column, value_set=known)

    def text(self, name: str, coded: pa.Array) -> pa.Array:
        """Codes of column `name` back as its text."""
        return self._dictionaries[name].take(coded)

    def coded(self, schema: pa.Schema) -> pa.Schema:
        """`schema` with the coded columns as codes."""
        return pa.schema([f.with_type(pa.int32()) if f.name in self._dictionaries else f
                          for f in schema])

    def decode(self, table: pa.Table, schema: pa.Schema) -> pa.Table:
        """A table of `coded(schema)` as `schema`."""
        return pa.table([self._dictionaries[f.name].take(table[f.name])
                         if f.name in self._dictionaries else table[f.name]
                         for f in schema], schema=schema)
