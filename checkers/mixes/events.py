"""The events as codes: gathered group by group in columns of each one's width, their
texts as codes into dictionaries, laid out in time order at the end."""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa


class _Texts:
    """A text column's distinct values, as codes into one dictionary built at the end."""

    def __init__(self) -> None:
        self._codes: dict[str, int] = {}
        self._chunks: list[pa.Array] = []
        self._pending: list[str] = []
        self.size = 0

    def code(self, text: str) -> int:
        found = self._codes.get(text)
        if found is None:
            found = self._codes[text] = self.size
            self._pending.append(text)
            self.size += 1
        return found

    def codes(self, texts: pa.Array) -> np.ndarray:
        """Codes for many texts, each taken as new (cursor details)."""
        self._flush()
        self._chunks.append(texts)
        self.size += len(texts)
        return np.arange(self.size - len(texts), self.size)

    def dictionary(self) -> pa.Array:
        self._flush()
        return pa.concat_arrays([pa.array([], pa.string()), *self._chunks])

    def _flush(self) -> None:
        if self._pending:
            self._chunks.append(pa.array(self._pending, pa.string()))
            self._pending = []


_COLUMNS: dict[str, type[np.integer[Any]]] = {
    "time": np.int64, "prio": np.int8, "process": np.int64, "type": np.int8, "f": np.int8,
    "cluster": np.int8, "node": np.int8, "topic": np.int8, "subscription": np.int8,
    "consumer": np.int32, "key": np.int32, "value": np.int64, "segment": np.int32,
    "ledger": np.int32, "entry": np.int64, "epoch": np.int32, "redelivery": np.int32,
    "error": np.int8, "detail": np.int32}
"""Event columns as codes, -1 when absent: `value` >= 0 is a message, <= -2 a text;
`ledger` and `entry` make the position. `prio` orders the events of one instant: a
reading before the acks it confirms."""


class _Events:
    """Events gathered group by group (as codes of each column's width), laid out in time
    order at the end."""

    def __init__(self) -> None:
        self._parts: list[dict[str, Any]] = []
        self.texts = _Texts()
        self.details = _Texts()

    def add(self, time: np.ndarray, **columns: Any) -> None:
        if len(time):
            self._parts.append({"n": len(time), "time": time.astype(np.int64), **{
                name: np.asarray(value).astype(_COLUMNS[name]) for name, value in
                columns.items()}})

    def value(self, text: str) -> int:
        return -2 - self.texts.code(text)

    def detail(self, text: str) -> int:
        return self.details.code(text)

    def column(self, name: str, keep: bool = False) -> np.ndarray:
        """One column over every event, in the order added; taken out of the events unless
        kept, so that each column's codes are freed once converted."""
        default = np.asarray(0 if name == "prio" else -1, _COLUMNS[name])
        found = np.concatenate([np.broadcast_to(p.get(name, default), p["n"])
                                for p in self._parts])
        if not keep:
            for part in self._parts:
                part.pop(name, None)
        return found

    def order(self) -> np.ndarray:
        """Time order; within an instant, by `prio`, then as added."""
        stamp = self.column("time", keep=True) * 8 + self.column("prio")
        return np.argsort(stamp, kind="stable")
