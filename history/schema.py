"""The event schema of the history format (docs/history.md), as data the readers validate
against."""

from __future__ import annotations

from typing import Any

import mmh3
import orjson
import pyarrow as pa

# field -> (arrow type, required). Order is the Parquet column order.
FIELDS: dict[str, tuple[pa.DataType, bool]] = {
    "index": (pa.int64(), True),
    "time": (pa.int64(), True),
    "process": (pa.string(), True),
    "type": (pa.string(), True),
    "f": (pa.string(), True),
    "cluster": (pa.string(), False),
    "node": (pa.string(), False),
    "topic": (pa.string(), False),
    "subscription": (pa.string(), False),
    "consumer": (pa.string(), False),
    "key": (pa.string(), False),
    "value": (pa.string(), False),
    "segment": (pa.int64(), False),
    "position": (pa.string(), False),
    "epoch": (pa.int64(), False),
    "redelivery": (pa.int64(), False),
    "error": (pa.string(), False),
    "detail": (pa.string(), False),
}

REQUIRED = tuple(name for name, (_, required) in FIELDS.items() if required)
INT_FIELDS = frozenset(name for name, (t, _) in FIELDS.items() if pa.types.is_integer(t))

# All nullable: Arrow's JSON reader yields nullable columns, and required fields are
# checked by the reader with a message naming the line, which a schema error would not.
ARROW_SCHEMA = pa.schema([pa.field(name, t) for name, (t, _) in FIELDS.items()])

EVENT_TYPES = frozenset({"invoke", "ok", "fail", "info"})

# Observations are single `ok` events with no invoke (spec, "Process rules").
OBSERVATIONS = frozenset({"recv", "layout", "meta", "cursor", "assign", "health"})

# Subscription modes whose deliveries must keep a key's send order (spec, `order`).
ORDERED_MODES = ("stream", "exclusive", "failover", "key_shared")

DEFAULT_DUPLICATE_WINDOW_BOUND_MS = 2000
DEFAULT_STALLED_SUBSCRIPTION_BOUND_MS = 10000

HASH_SPACE = 65536


def key_hash(key: str) -> int:
    """The spec's key hash (`misrouted`): murmur3 x86 32-bit, seed 0, of the UTF-8 bytes,
    made non-negative, modulo 65536."""
    return (mmh3.hash(key.encode(), 0) & 0x7FFFFFFF) % HASH_SPACE


def detail_object(text: str | None) -> dict[str, Any]:
    """A `detail` field's JSON object; empty when the text is absent or not an object
    (the spec leaves `detail` free-form, so no reader may fail on it)."""
    if not text:
        return {}
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}
