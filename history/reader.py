"""Reading a history: find it, validate it against the format, hand it on as Parquet.

The only reader of history files. A JSON Lines history streams through Arrow's
multithreaded JSON reader in batches, so no reader ever holds the whole history; Arrow's
errors do not name lines, so when anything is wrong a second, plain-Python pass walks the
file line by line to name the exact line and field (that pass runs only on bad input).

Readers that want to do their own work in the same pass (the checkers pair operations while
the file is validated) hand in a `BatchConsumer`: it sees every validated batch, conformed
to the format's columns and types, in file order.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj
import pyarrow.parquet as pq

from history.errors import BadInput
from history.partial import temporary_beside
from history.schema import ARROW_SCHEMA, EVENT_TYPES, FIELDS, INT_FIELDS, REQUIRED
from history.torn_line import NotTorn, check_torn

log = logging.getLogger(__name__)

_BLOCK = 8 << 20


class BatchConsumer(Protocol):
    """Work done in the reader's pass: fed each validated batch in file order."""

    def feed(self, batch: pa.RecordBatch) -> None: ...


@dataclass(frozen=True)
class ParquetHistory:
    """A validated history as Parquet (the format's `history.parquet`)."""

    source: Path
    parquet: Path
    events: int
    truncated_tail: bool
    """A torn last line was dropped: the run was cut off mid-write."""


class HistoryError(BadInput):
    """A history that breaks the contract; the message names file, line or row, and field."""


def find_history(path: Path) -> Path:
    """The history file of a run directory, or `path` itself when it is a file."""
    if path.is_file():
        return path
    for name in ("history.jsonl", "history.parquet"):
        if (path / name).is_file():
            return path / name
    raise HistoryError(f"{path}: no history.jsonl or history.parquet in this directory")


def discover_runs(path: Path) -> dict[str, Path]:
    """Run id -> history file. A file or a run directory is one run; any other directory
    holds runs below it (a directory with a history in it), each counted once even when a
    symlink such as `runs/latest` points at it again."""
    if path.is_file() or any((path / n).is_file() for n in ("history.jsonl", "history.parquet")):
        history = find_history(path)
        return {history.parent.name if path.is_dir() else history.stem: history}
    runs: dict[str, Path] = {}
    seen: set[Path] = set()
    found = [h for h in path.rglob("history.*") if h.suffix in (".jsonl", ".parquet")]
    for history in sorted(found, key=lambda h: (_through_symlink(path, h), str(h))):
        if history.parent.resolve() in seen:
            continue
        seen.add(history.parent.resolve())
        runs[str(history.parent.relative_to(path))] = find_history(history.parent)
    if not runs:
        raise HistoryError(f"{path}: no history file in it or in any directory below it")
    return runs


def _through_symlink(top: Path, history: Path) -> bool:
    relative = history.parent.relative_to(top)
    return any((top / part).is_symlink() for part in [relative, *relative.parents][:-1])


def parquet_path(path: Path) -> Path:
    """Where a JSON Lines history's Parquet form lives: beside it, same stem."""
    return path.with_suffix(".parquet")


def newer(derived: Path, source: Path) -> bool:
    """`derived` exists and was written after `source` last changed."""
    return derived.exists() and derived.stat().st_mtime >= source.stat().st_mtime


def to_parquet(path: Path) -> ParquetHistory:
    """The history at `path` as Parquet: a JSON Lines file is converted beside itself
    (or its conversion reused while newer), a Parquet file is opened and its columns
    checked. Row rules are checked whenever a file is converted or consumed."""
    if path.suffix == ".parquet":
        return ParquetHistory(path, path, _open_parquet(path).metadata.num_rows, False)
    return convert_jsonl(path, None)


def convert_jsonl(path: Path, consumer: BatchConsumer | None) -> ParquetHistory:
    """Validate a JSON Lines history and write it as Parquet beside itself, feeding
    `consumer` every batch. Without a consumer a conversion newer than the file is reused;
    a consumer always gets a pass (over the Parquet file when that is reused)."""
    if path.suffix != ".jsonl":
        raise HistoryError(f"{path}: a history must be .jsonl or .parquet")
    target = parquet_path(path)
    length, truncated = _complete_length(path)
    if truncated:
        log.warning("%s: last line is incomplete JSON (run cut off mid-write); dropped", path)
    if newer(target, path):
        events = (validate_parquet(target, consumer) if consumer is not None
                  else pq.ParquetFile(target).metadata.num_rows)
    else:
        events = _convert(path, length, target, consumer)
    return ParquetHistory(path, target, events, truncated)


def validate_parquet(path: Path, consumer: BatchConsumer | None) -> int:
    """Check a Parquet history's columns and every row, feeding `consumer` each batch;
    the number of events."""
    file = _open_parquet(path)
    checker = _BatchChecker()
    present = [name for name in FIELDS if name in file.schema_arrow.names]
    try:
        for batch in _read_ahead(file.iter_batches(batch_size=1 << 20, columns=present,
                                                   use_threads=False)):
            batch = _conformed(batch)
            checker.check(batch)
            if consumer is not None:
                consumer.feed(batch)
    except _Violation as exc:
        raise HistoryError(f"{path}: {exc}") from None
    except (pa.ArrowException, OSError) as exc:  # a page that does not decode
        raise HistoryError(f"{path}: not a readable Parquet file ({exc})") from None
    return checker.rows


def _open_parquet(path: Path) -> pq.ParquetFile:
    """The file, its columns checked against the format's types."""
    try:
        file = pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise HistoryError(f"{path}: not a readable Parquet file ({exc})") from None
    schema = file.schema_arrow
    for name, (arrow_type, required) in FIELDS.items():
        if name not in schema.names:
            if required:
                raise HistoryError(f"{path}: required column {name!r} is missing")
            continue
        actual = schema.field(name).type
        if pa.types.is_integer(arrow_type) != pa.types.is_integer(actual) or (
                arrow_type == pa.string() and not pa.types.is_string(actual)
                and not pa.types.is_large_string(actual)):
            raise HistoryError(f"{path}: column {name!r} has type {actual}, "
                               f"expected {arrow_type}")
    return file


def _convert(path: Path, length: int, target: Path, consumer: BatchConsumer | None) -> int:
    tmp = temporary_beside(target)
    try:
        with pa.memory_map(str(path)) as mm:
            data = mm.read_buffer(length)
            lines, longest = _line_counts(data)
            checker = _BatchChecker()
            try:
                with pq.ParquetWriter(tmp, ARROW_SCHEMA) as writer:
                    for batch in _arrow_batches(data, longest):
                        checker.check(batch)
                        writer.write_batch(batch)
                        if consumer is not None:
                            consumer.feed(batch)
            except (pa.ArrowInvalid, _Violation) as exc:
                _locate_jsonl_error(path, data)
                raise HistoryError(f"{path}: {exc}") from exc
            if checker.rows != lines:
                _locate_jsonl_error(path, data)  # a blank line, most likely
                raise HistoryError(f"{path}: {lines} lines but {checker.rows} events")
        tmp.replace(target)
        return checker.rows
    finally:
        tmp.unlink(missing_ok=True)


def _complete_length(path: Path) -> tuple[int, bool]:
    """Bytes up to the last complete line, and whether a torn last line was cut off: one
    that is the start of a JSON object (history/torn_line.py). A last line that is neither
    a JSON object nor the start of one is bad input, refused with its line's number and
    the file left as it is."""
    size = path.stat().st_size
    if size == 0:
        return 0, False
    with open(path, "rb") as f:
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return size, False
        last = _last_line(f, size)
    try:
        orjson.loads(last)
        return size, False
    except orjson.JSONDecodeError:
        pass
    try:
        check_torn(last)
    except NotTorn as exc:
        raise HistoryError(f"{path}:{_line_number(path, size - len(last))}: not a JSON "
                           f"object, nor one cut off mid-write: {exc}") from None
    return size - len(last), True


def _line_number(path: Path, offset: int) -> int:
    """The number (from 1) of the line starting at byte `offset`, by its newlines before."""
    newlines = 0
    with open(path, "rb") as f:
        while offset > 0 and (block := f.read(min(offset, 1 << 20))):
            newlines += block.count(b"\n")
            offset -= len(block)
    return newlines + 1


def _last_line(f: BinaryIO, size: int) -> bytes:
    """The bytes after the file's last newline, however long that line is."""
    start = size
    while start > 0:
        start = max(0, start - (1 << 20))
        f.seek(start)
        cut = f.read(size - start).rfind(b"\n")
        if cut >= 0:
            start += cut + 1
            break
    f.seek(start)
    return f.read()


def _line_counts(data: pa.Buffer) -> tuple[int, int]:
    """The number of lines and the length of the longest, counted block by block: a line
    that fits in one block is shorter than the block, so only lines across block
    boundaries need measuring, from the last newline of one block to the first of the
    next block that has one."""
    view = np.frombuffer(data, dtype=np.uint8)
    lines = longest = 0
    previous = -1  # the last newline seen so far
    for i in range(0, len(view), _BLOCK):
        newlines = view[i:i + _BLOCK] == 10
        count = int(np.count_nonzero(newlines))
        if count:
            longest = max(longest, i + int(np.argmax(newlines)) - previous)
            previous = i + len(newlines) - 1 - int(np.argmax(newlines[::-1]))
            lines += count
    if len(view) and view[-1] != 10:
        lines += 1
        longest = max(longest, len(view) - 1 - previous)
    return lines, longest


def _arrow_batches(data: pa.Buffer, longest_line: int) -> Iterator[pa.RecordBatch]:
    """Arrow parses blocks of `_BLOCK` bytes, and a line may not cross two block
    boundaries: longer lines (a huge value, say) get blocks that hold them."""
    if data.size == 0:
        return
    reader = pj.open_json(
        pa.BufferReader(data),
        read_options=pj.ReadOptions(block_size=max(_BLOCK, 2 * longest_line)),
        parse_options=pj.ParseOptions(explicit_schema=ARROW_SCHEMA,
                                      unexpected_field_behavior="ignore"),
    )
    for batch in reader:
        yield batch.select(ARROW_SCHEMA.names) if batch.schema != ARROW_SCHEMA else batch


class _Violation(Exception):
    pass


class _BatchChecker:
    """The contract's per-column rules, vectorised over Arrow batches, carried across them."""

    def __init__(self) -> None:
        self.rows = 0
        self._last_index: int | None = None
        self._last_time: int | None = None

    def check(self, batch: pa.RecordBatch) -> None:
        """Raise `_Violation` naming the first bad row (0-based over the whole history)."""
        for name in REQUIRED:
            column = batch.column(name)
            if column.null_count:
                self._fail(int(pc.index(pc.is_null(column), True).as_py()), name, "missing")
        if not pc.all(pc.is_in(batch.column("type"), pa.array(sorted(EVENT_TYPES)))).as_py():
            bad = pc.index(pc.invert(pc.is_in(batch.column("type"),
                                               pa.array(sorted(EVENT_TYPES)))), True)
            self._fail(int(bad.as_py()), "type", "not one of invoke, ok, fail, info")
        self._check_monotonic(batch.column("index"), "index", strictly=True)
        self._check_monotonic(batch.column("time"), "time", strictly=False)
        self.rows += batch.num_rows

    def _check_monotonic(self, column: pa.Array, name: str, *, strictly: bool) -> None:
        values = column.to_numpy(zero_copy_only=False)
        if not len(values):
            return
        last = self._last_index if name == "index" else self._last_time
        values_with_prev = np.concatenate(([last], values)) if last is not None else values
        steps = np.diff(values_with_prev)
        bad = np.flatnonzero(steps <= 0 if strictly else steps < 0)
        if len(bad):
            row = int(bad[0]) + (0 if last is not None else 1)
            rule = "strictly increasing" if strictly else "non-decreasing"
            self._fail(row, name, f"must be {rule} in file order")
        if name == "index":
            self._last_index = int(values[-1])
        else:
            self._last_time = int(values[-1])

    def _fail(self, row_in_batch: int, field: str, what: str) -> None:
        raise _Violation(f"row {self.rows + row_in_batch}, field {field!r}: {what}")


def _locate_jsonl_error(path: Path, data: pa.Buffer) -> None:
    """Walk the lines in plain Python and raise for the first bad one, naming line and field."""
    last_index: int | None = None
    last_time: int | None = None
    text = data.to_pybytes()
    lines = text.split(b"\n")
    if text.endswith(b"\n"):
        lines.pop()  # the empty string after the final newline
    for number, line in enumerate(lines, start=1):
        where = f"{path}:{number}"
        try:
            event = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise HistoryError(f"{where}: not a JSON object ({exc})") from None
        if not isinstance(event, dict):
            raise HistoryError(f"{where}: not a JSON object")
        for name, (_arrow_type, required) in FIELDS.items():
            value = event.get(name)
            if value is None:
                if required:
                    raise HistoryError(f"{where}: field {name!r} is missing")
                continue
            expected = int if name in INT_FIELDS else str
            if isinstance(value, bool) or not isinstance(value, expected):
                raise HistoryError(f"{where}: field {name!r} must be "
                                   f"{'an integer' if expected is int else 'a string'}, "
                                   f"got {value!r}")
        if event["type"] not in EVENT_TYPES:
            raise HistoryError(f"{where}: field 'type' must be one of invoke, ok, fail, info, "
                               f"got {event['type']!r}")
        if last_index is not None and event["index"] <= last_index:
            raise HistoryError(f"{where}: field 'index' must be strictly increasing "
                               f"({event['index']} after {last_index})")
        if last_time is not None and event["time"] < last_time:
            raise HistoryError(f"{where}: field 'time' must be non-decreasing "
                               f"({event['time']} after {last_time})")
        last_index, last_time = event["index"], event["time"]


def _read_ahead(batches: Iterator[pa.RecordBatch], depth: int = 2) -> Iterator[pa.RecordBatch]:
    """The batches, decoded by a thread up to `depth` ahead of their consumer: Parquet
    decoding releases the GIL, so reading overlaps validating and pairing (one thread
    decodes faster than Arrow's pool of threads on a small machine)."""
    with ThreadPoolExecutor(max_workers=1) as reader:
        ahead = deque(reader.submit(next, batches, None) for _ in range(depth))
        while (batch := ahead.popleft().result()) is not None:
            ahead.append(reader.submit(next, batches, None))
            yield batch


def _conformed(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The batch with exactly the spec's columns and types (absent optional ones null)."""
    columns = []
    for field in ARROW_SCHEMA:
        if field.name not in batch.schema.names:
            columns.append(pa.nulls(batch.num_rows, field.type))
            continue
        column = batch.column(field.name)
        columns.append(column if column.type == field.type else column.cast(field.type))
    return pa.RecordBatch.from_arrays(columns, schema=ARROW_SCHEMA)
