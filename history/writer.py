"""Recording a run's history as it happens (the history format: docs/history.md).

Every event is handed to the operating system before `record` returns, with one unbuffered
`write` of one whole line: a harness that crashes or is killed leaves a file whose lines
are complete and checkable up to the last. That one may be torn, when SIGKILL lands while
the kernel copies a line across a page of the file, or when the machine itself goes down;
the reader drops it and says so (`truncated_tail`). One write per event costs far less than
the clients it records (`starquake bench history` measures it).
"""

from __future__ import annotations

import itertools
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from history.schema import EVENT_TYPES

_ONE_LINE = orjson.OPT_APPEND_NEWLINE


class HistoryWriter:
    """Appends events to `history.jsonl`, assigning `index` and `time`.

    `time` is nanoseconds on the monotonic clock since the writer was created, so it never
    goes backwards with `index` even when the wall clock is stepped. Thread-safe: the index,
    the time and the write happen under one lock, so file order, index order and time order
    agree whatever threads record.
    """

    def __init__(self, path: Path, *, clock: Callable[[], int] = time.monotonic_ns) -> None:
        self.path = Path(path)
        # O_EXCL: a run never appends to another run's history.
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        self._clock = clock
        self._start = clock()
        self._next_index = 0
        self._lock = threading.Lock()

    def record(self, process: str, type: str, f: str, **fields: Any) -> int:
        """Write one event now; returns its index. Fields that are None are left out, and
        `detail` may be given as a dict (it is stored as JSON text, as the spec says)."""
        if type not in EVENT_TYPES:  # a bug in the caller, caught here, not after the run
            raise ValueError(f"event type {type!r} is not one of {sorted(EVENT_TYPES)}")
        if None in fields.values():
            fields = {k: v for k, v in fields.items() if v is not None}
        detail = fields.get("detail")
        if detail is not None and not isinstance(detail, str):
            fields["detail"] = orjson.dumps(detail).decode()
        with self._lock:
            if self._fd < 0:
                raise ValueError(f"history {self.path} is closed")
            index = self._next_index
            event = {"index": index, "time": self._clock() - self._start,
                     "process": process, "type": type, "f": f, **fields}
            os.write(self._fd, orjson.dumps(event, option=_ONE_LINE))
            self._next_index = index + 1
        return index

    @property
    def events(self) -> int:
        return self._next_index

    def close(self) -> None:
        with self._lock:
            if self._fd >= 0:
                os.fsync(self._fd)
                os.close(self._fd)
                self._fd = -1

    def __enter__(self) -> HistoryWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class SequentialIds:
    """Ids unique within a run: `p0, p1, ...` for client processes (the spec retires an id
    after an `info`, so a worker takes a fresh one), `m0, m1, ...` for message ids."""

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix
        self._counter = itertools.count()
        self._lock = threading.Lock()

    def fresh(self) -> str:
        with self._lock:
            return f"{self._prefix}{next(self._counter)}"


class ClientProcess:
    """One worker's view of the history: at most one operation outstanding, and a new
    process id after every `info`, so a worker cannot break the process rules by accident."""

    def __init__(self, writer: HistoryWriter, ids: SequentialIds) -> None:
        self._writer = writer
        self._ids = ids
        self.process = ids.fresh()
        self._pending: str | None = None

    def invoke(self, f: str, **fields: Any) -> int:
        if self._pending is not None:
            raise RuntimeError(f"{self.process} invoked {f} while {self._pending} is outstanding")
        self._pending = f
        return self._writer.record(self.process, "invoke", f, **fields)

    def complete(self, type: str, **fields: Any) -> int:
        """Record the outstanding operation's completion (`ok`, `fail` or `info`)."""
        if self._pending is None:
            raise RuntimeError(f"{self.process} completed with no operation outstanding")
        if type == "invoke":
            raise ValueError("a completion cannot be an invoke")
        f, self._pending = self._pending, None
        index = self._writer.record(self.process, type, f, **fields)
        if type == "info":
            self.process = self._ids.fresh()
        return index

    def observe(self, f: str, **fields: Any) -> int:
        """An observation (`recv`, `layout`): a single `ok` event with no invoke."""
        return self._writer.record(self.process, "ok", f, **fields)
