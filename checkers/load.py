"""The checkers' input: a validated history as Parquet, with its operations paired.

`history.reader` validates and converts the file; the checkers pair invocations with
their completions in the same streaming pass (`checkers.pairing`), so a history is read
once however many checkers judge it. The paired files are reused while they are newer
than the Parquet history and were written by this code (their schemas match).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from checkers.pairing import (
    CUMULATIVE_ACKS_FILE,
    CUMULATIVE_ACKS_SCHEMA,
    FACTS_FILE,
    FACTS_SCHEMA,
    OPERATIONS_SCHEMA,
    PAIRED_FILES,
    OperationPairer,
)
from checkers.views import OBSERVATIONS_FILE, OPERATIONS_FILE
from history.partial import temporary_beside
from history.reader import HistoryError, convert_jsonl, newer, parquet_path, validate_parquet


@dataclass(frozen=True)
class PreparedHistory:
    """A validated history as Spark will read it."""

    source: Path
    parquet: Path
    """The events as Parquet (the format's `history.parquet`)."""
    events: int
    truncated_tail: bool
    """A torn last line was dropped: the run was cut off mid-write."""
    paired: Path
    """The checkers' input, its operations paired (see `checkers.pairing`)."""

    @property
    def operations(self) -> Path:
        return self.paired / OPERATIONS_FILE

    @property
    def observations(self) -> Path:
        return self.paired / OBSERVATIONS_FILE

    @property
    def facts(self) -> Path:
        return self.paired / FACTS_FILE


def prepare(path: Path) -> PreparedHistory:
    """Validate a history file and return the files Spark reads.

    A JSON Lines history is converted to `history.parquet` beside it (or that file reused
    when newer); a Parquet history is validated in place. Either way the same streaming
    pass writes the paired operations to `<name>.paired/` beside the Parquet file.
    """
    if path.suffix == ".parquet":
        prepared = PreparedHistory(path, path, _validated_and_paired(path), False,
                                   _paired_dir(path))
    elif path.suffix == ".jsonl":
        target = parquet_path(path)
        if newer(target, path) and _paired_is_current(target):
            read = convert_jsonl(path, None)
        else:
            with _pairing(target) as pairer:
                read = convert_jsonl(path, pairer)
        prepared = PreparedHistory(path, read.parquet, read.events, read.truncated_tail,
                                   _paired_dir(read.parquet))
    else:
        raise HistoryError(f"{path}: a history must be .jsonl or .parquet")
    if prepared.events == 0:
        # A run writes its meta event before anything else, so no event at all is no run:
        # judging it would say `unknown` about nothing.
        raise HistoryError(f"{path}: no events; an empty history cannot be judged")
    return prepared


def derived_from(path: Path) -> list[Path]:
    """What `prepare` writes beside the history at `path`: its Parquet form (for JSON
    Lines) and the paired files. Removing them makes the next check start from the file."""
    parquet = path if path.suffix == ".parquet" else parquet_path(path)
    return [*([parquet] if parquet != path else []), _paired_dir(parquet)]


def _paired_dir(parquet: Path) -> Path:
    return parquet.with_name(f"{parquet.stem}.paired")


def _paired_is_current(parquet: Path) -> bool:
    """The paired files were written from this Parquet file by this code."""
    paired = _paired_dir(parquet)
    schemas = {OPERATIONS_FILE: OPERATIONS_SCHEMA, FACTS_FILE: FACTS_SCHEMA,
               CUMULATIVE_ACKS_FILE: CUMULATIVE_ACKS_SCHEMA}
    return all(newer(paired / name, parquet) for name in PAIRED_FILES) and all(
        pq.read_schema(paired / name).equals(schema)  # else paired by older code
        for name, schema in schemas.items())


def _validated_and_paired(path: Path) -> int:
    """Validate a Parquet history and pair its operations, unless that was done since the
    file last changed; the number of events."""
    if _paired_is_current(path):
        return int(pq.ParquetFile(path).metadata.num_rows)
    with _pairing(path) as pairer:
        return validate_parquet(path, pairer)


@contextmanager
def _pairing(parquet: Path) -> Iterator[OperationPairer]:
    """An `OperationPairer` writing beside `parquet`; its files appear only when complete."""
    final = _paired_dir(parquet)
    tmp = temporary_beside(final)
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        pairer = OperationPairer(tmp)
        yield pairer
        pairer.close()
        shutil.rmtree(final, ignore_errors=True)
        tmp.rename(final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
