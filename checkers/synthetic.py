"""Synthetic histories with anomalies of known counts, for the benchmark and property tests.

A legal history: keyed producers send to a scalable topic whose root segment 0 was split
into segments 1 and 2, each key routed by the spec's hash; one exclusive subscription
receives every message in send order and acknowledges it; a final drain completes. Each
message is a block of events (send invoke, send ok, recv, ack invoke, ack ok, and a spare
slot for an injected delivery). Injections rewrite chosen blocks so that each adds exactly
one counted unit of one anomaly, on disjoint messages; the two that need `cursor`
observations (`ack-unapplied`, `stalled-subscription`) add them after the drain.
Vectorised with numpy, so twenty million events take seconds, not minutes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from history.schema import ARROW_SCHEMA, key_hash

TOPIC = "topic://synthetic/ns/t"
SUBSCRIPTION = "s"
CLUSTER = "a"
INJECTABLE = ("lost", "unexpected", "failed-delivered", "duplicate", "dual-write",
              "forked-position", "misrouted", "order", "multi-position", "ack-unapplied",
              "stalled-subscription")
_SLOTS = 6  # send invoke, send ok, recv, ack invoke, ack ok, injected recv
_SEND_INV, _SEND_OK, _RECV, _ACK_INV, _ACK_OK, _EXTRA = range(_SLOTS)
_TYPES = ("invoke", "ok", "fail", "info")
_INVOKE, _OK, _FAIL, _INFO = range(len(_TYPES))
_LAYOUT = {
    "epoch": 1, "nextSegmentId": 3, "properties": {},
    "segments": {
        "0": {"segmentId": 0, "hashRange": {"start": 0, "end": 65535}, "state": "SEALED",
              "parentIds": [], "childIds": [1, 2], "createdAtEpoch": 0, "sealedAtEpoch": 1},
        "1": {"segmentId": 1, "hashRange": {"start": 0, "end": 32767}, "state": "ACTIVE",
              "parentIds": [0], "childIds": [], "createdAtEpoch": 1, "sealedAtEpoch": 0},
        "2": {"segmentId": 2, "hashRange": {"start": 32768, "end": 65535}, "state": "ACTIVE",
              "parentIds": [0], "childIds": [], "createdAtEpoch": 1, "sealedAtEpoch": 0},
    },
}


@dataclass(frozen=True)
class SyntheticSpec:
    messages: int
    seed: int = 0
    keys: int = 64
    producers: int = 4
    inject: dict[str, int] = field(default_factory=dict)
    """Anomaly name -> how many counted units to inject (see INJECTABLE)."""
    drain: bool = True


STALL_S = 11
"""How long each injected stall lasts: over the default bound of 10 s."""


def generate(spec: SyntheticSpec) -> pa.Table:
    """The history as an Arrow table with the spec's columns, index and time in order."""
    unknown = set(spec.inject) - set(INJECTABLE)
    if unknown:
        raise ValueError(f"cannot inject {sorted(unknown)}; injectable: {', '.join(INJECTABLE)}")
    rng = np.random.default_rng(spec.seed)
    m = spec.messages
    ids = np.arange(m)
    key_ids = ids % spec.keys
    key_segment = np.array([1 if key_hash(f"k{k}") <= 32767 else 2 for k in range(spec.keys)])
    cols = _Blocks(m)
    cols.present[:, :_EXTRA] = True
    cols.process[:, [_SEND_INV, _SEND_OK]] = (ids % spec.producers)[:, None]
    cols.process[:, _RECV:] = -1  # the consumer, c0
    cols.f[:, [_SEND_INV, _SEND_OK]] = 0
    cols.f[:, _RECV] = 1
    cols.f[:, [_ACK_INV, _ACK_OK]] = 2
    cols.f[:, _EXTRA] = 1
    cols.type[:, [_SEND_INV, _ACK_INV]] = 0
    cols.type[:, [_SEND_OK, _RECV, _ACK_OK, _EXTRA]] = _OK
    cols.value[:] = ids[:, None]
    cols.key[:, _SEND_INV] = key_ids
    cols.segment[:, [_SEND_OK, _RECV, _EXTRA]] = key_segment[key_ids][:, None]
    cols.entry[:, [_SEND_OK, _RECV, _EXTRA]] = ids[:, None]

    chooser = _Chooser(rng, m, spec.keys)
    for kind, count in spec.inject.items():
        if kind != "stalled-subscription":  # cursor readings only, no message's block
            _INJECTORS[kind](cols, chooser.pick(kind, count), spec)
    return _table(cols, spec)


def write_parquet(spec: SyntheticSpec, path: Path) -> int:
    table = generate(spec)
    pq.write_table(table, path, row_group_size=1 << 20)
    return int(table.num_rows)


def write_jsonl(spec: SyntheticSpec, path: Path) -> int:
    """JSON Lines, for small histories (tests of the JSON reader)."""
    table = generate(spec)
    with open(path, "w") as out:
        for row in table.to_pylist():
            out.write(json.dumps({k: v for k, v in row.items() if v is not None}) + "\n")
    return int(table.num_rows)


class _Blocks:
    """Per message, per slot: small integer codes, turned into strings only at the end."""

    def __init__(self, m: int) -> None:
        shape = (m, _SLOTS)
        self.present = np.zeros(shape, dtype=bool)
        self.process = np.zeros(shape, dtype=np.int64)
        self.f = np.zeros(shape, dtype=np.int8)
        self.type = np.zeros(shape, dtype=np.int8)
        self.value = np.zeros(shape, dtype=np.int64)
        self.unsent = np.zeros(shape, dtype=bool)  # value names a message nobody sent
        self.key = np.full(shape, -1, dtype=np.int64)
        self.segment = np.full(shape, -1, dtype=np.int64)
        self.entry = np.full(shape, -1, dtype=np.int64)


class _Chooser:
    """Disjoint messages for injections: the centre of distinct blocks 4K+4 messages wide,
    so no injection reaches another's messages (order and forked-position reach one key
    period, K messages, away). Block 0 is never used: it anchors the children's first
    writes and every key's first message."""

    def __init__(self, rng: np.random.Generator, m: int, keys: int) -> None:
        self._keys = keys
        self._width = 4 * keys + 4
        self._blocks = list(rng.permutation(np.arange(1, m // self._width)))

    def pick(self, kind: str, count: int) -> np.ndarray:
        if count > len(self._blocks):
            raise ValueError(f"too few messages to inject {count} {kind}")
        chosen, self._blocks = self._blocks[:count], self._blocks[count:]
        return np.sort(np.array(chosen, dtype=np.int64)) * self._width + 2 * self._keys + 2


def _lost(cols: _Blocks, chosen: np.ndarray, spec: SyntheticSpec) -> None:
    cols.present[chosen, _RECV:] = False


def _unexpected(cols: _Blocks, chosen: np.ndarray, spec: SyntheticSpec) -> None:
    cols.present[chosen, _EXTRA] = True
    cols.unsent[chosen, _EXTRA] = True
    cols.entry[chosen, _EXTRA] = -1  # no position: it must not also fork one


def _failed_delivered(cols: _Blocks, chosen: np.ndarray, spec: SyntheticSpec) -> None:
    cols.type[chosen, _SEND_OK] = _FAIL
    cols.entry[chosen, _SEND_OK] = -1


def _duplicate(cols: _Blocks, chosen: np.ndarray, spec: SyntheticSpec) -> None:
    cols.present[chosen, _EXTRA] = True


def _dual_write(cols: _Blocks, chosen: np.ndarray, spec: SyntheticSpec) -> None:
    # Segment 0 is the children's parent; these sends come after children took writes.
    cols.segment[chosen, _SEND_OK] = 0
    cols.segment[chosen, _RECV] = 0


def _forked_position(cols: _Blocks, chosen: np.ndarray, spec: SyntheticSpec) -> None:
    earlier = chosen - spec.keys  # same key, so the same segment
    for slot in (_SEND_OK, _RECV):
        cols.entry[chosen, slot] = cols.entry[earlier, _SEND_OK]


def _misrouted(cols: _Blocks, chosen: np.ndarray, spec: SyntheticSpec) -> None:
    for slot in (_SEND_OK, _RECV):
        cols.segment[chosen, slot] = 3 - cols.segment[chosen, slot]


def _order(cols: _Blocks, chosen: np.ndarray, spec: SyntheticSpec) -> None:
    later = chosen + spec.keys  # the same key's next message
    for slot in (_RECV, _ACK_INV, _ACK_OK):
        for column in (cols.value, cols.segment, cols.entry):
            column[chosen, slot], column[later, slot] = (column[later, slot],
                                                         column[chosen, slot].copy())


def _multi_position(cols: _Blocks, chosen: np.ndarray, spec: SyntheticSpec) -> None:
    """Stored three times: the send's answer names one copy (past every message's
    entry, so no position forks), the consumer gets another, acknowledges it (naming its
    position, so the third copy's delivery is no duplicate), then gets the third."""
    m = spec.messages
    cols.entry[chosen, _SEND_OK] = m + chosen
    cols.present[chosen, _EXTRA] = True
    cols.entry[chosen, _EXTRA] = 2 * m + chosen
    for slot in (_ACK_INV, _ACK_OK):
        cols.segment[chosen, slot] = cols.segment[chosen, _RECV]
        cols.entry[chosen, slot] = cols.entry[chosen, _RECV]


def _ack_unapplied(cols: _Blocks, chosen: np.ndarray, spec: SyntheticSpec) -> None:
    """The ack never confirmed; the final cursor reading leaves these messages out
    (`_cursor_tail`)."""
    cols.type[chosen, _ACK_OK] = _INFO


_INJECTORS = {
    "lost": _lost, "unexpected": _unexpected, "failed-delivered": _failed_delivered,
    "duplicate": _duplicate, "dual-write": _dual_write, "forked-position": _forked_position,
    "misrouted": _misrouted, "order": _order, "multi-position": _multi_position,
    "ack-unapplied": _ack_unapplied,
}


def _cursor_tail(cols: _Blocks, spec: SyntheticSpec) -> list[dict[str, Any]]:
    """After the drain: for each injected stall, two readings of the subscription
    `STALL_S` apart with its cursor still (each stall at a cursor of its own, so each is
    one stretch), then the final reading, which holds every delivered position as
    acknowledged but those whose ack `ack-unapplied` left unconfirmed. Each row's
    `delay_ms` is how much later than the one before it it comes."""
    fields = {"process": "observer", "type": "ok", "f": "cursor", "value": SUBSCRIPTION,
              "topic": TOPIC, "subscription": SUBSCRIPTION, "cluster": CLUSTER}
    readings: list[dict[str, Any]] = []
    for stall in range(spec.inject.get("stalled-subscription", 0)):
        detail = json.dumps({"individually_deleted": [], "backlog": 5, "consumers": 1,
                             "unacked": 0})
        readings += [{**fields, "position": f"0:{stall}", "detail": detail, "delay_ms": 1},
                     {**fields, "position": f"0:{stall}", "detail": detail,
                      "delay_ms": STALL_S * 1000}]
    left_out = np.flatnonzero(cols.present[:, _ACK_OK] & (cols.type[:, _ACK_OK] == _INFO))
    if spec.inject.get("ack-unapplied"):
        detail = json.dumps({"individually_deleted": _ranges_without(
            cols.segment[left_out, _RECV], cols.entry[left_out, _RECV], spec),
            "backlog": len(left_out), "consumers": 1, "unacked": 0})
        readings.append({**fields, "position": "-1:-1", "detail": detail, "delay_ms": 1})
    return readings


def _ranges_without(ledgers: np.ndarray, entries: np.ndarray,
                    spec: SyntheticSpec) -> list[list[str]]:
    """Individually deleted ranges covering every position a synthetic history uses (its
    segments as ledgers, entries below three times the messages) except these."""
    ranges = []
    for ledger in (0, 1, 2):
        start = -1
        for entry in sorted(int(e) for e in entries[ledgers == ledger]):
            ranges.append([f"{ledger}:{start}", f"{ledger}:{entry - 1}"])
            start = entry
        ranges.append([f"{ledger}:{start}", f"{ledger}:{3 * spec.messages}"])
    return ranges


def _table(cols: _Blocks, spec: SyntheticSpec) -> pa.Table:
    mask = cols.present.ravel()
    n = int(mask.sum())
    tail_rows = [{"process": "harness", "type": t, "f": "drain", "value": TOPIC}
                 for t in ("invoke", "ok")] if spec.drain else []
    tail_rows += _cursor_tail(cols, spec)
    head, tail = 4, len(tail_rows)
    total = head + n + tail

    def flat(column: np.ndarray) -> np.ndarray:
        return column.ravel()[mask]

    process = flat(cols.process)
    # Code -1 (the consumer) indexes the last name.
    process_names = np.array([f"p{i}" for i in range(spec.producers)] + ["c0"], dtype=object)
    f_names = np.array(["send", "recv", "ack"], dtype=object)
    type_names = np.array(_TYPES, dtype=object)
    values = flat(cols.value)
    value_text = np.strings.add(np.where(flat(cols.unsent), "u", "m"), values.astype(str))
    key = flat(cols.key)
    segment = flat(cols.segment)
    entry = flat(cols.entry)
    position = np.strings.add(np.strings.add(segment.astype(str), ":"), entry.astype(str))
    consumer_rows = process == -1
    body = {
        "process": process_names[process],
        "type": type_names[flat(cols.type)],
        "f": f_names[flat(cols.f)],
        "value": pa.array(value_text),
        "key": pa.array(np.strings.add("k", key.astype(str)), mask=key < 0),
        "segment": pa.array(segment, mask=segment < 0),
        "position": pa.array(position, mask=entry < 0),
        "topic": pa.array(np.full(n, TOPIC)),
        "cluster": pa.array(np.full(n, CLUSTER)),
        "subscription": pa.array(np.full(n, SUBSCRIPTION), mask=~consumer_rows),
        "consumer": pa.array(np.full(n, "c0"), mask=~consumer_rows),
    }
    head_rows: list[dict[str, Any]] = [
        {"process": "harness", "type": "ok", "f": "meta",
         "detail": json.dumps({"scenario": "synthetic", "seed": spec.seed})},
        {"process": "observer", "type": "ok", "f": "layout", "topic": TOPIC, "epoch": 1,
         "detail": json.dumps(_LAYOUT)},
        {"process": "c0", "type": "invoke", "f": "subscribe", "value": SUBSCRIPTION,
         "topic": TOPIC, "subscription": SUBSCRIPTION, "cluster": CLUSTER,
         "detail": json.dumps({"mode": "exclusive"})},
        {"process": "c0", "type": "ok", "f": "subscribe", "value": SUBSCRIPTION,
         "topic": TOPIC, "subscription": SUBSCRIPTION, "cluster": CLUSTER},
    ]
    index = np.arange(total, dtype=np.int64)
    delays = np.zeros(total, dtype=np.int64)
    delays[head + n:] = np.cumsum([r.get("delay_ms", 0) for r in tail_rows]) * 1_000_000
    columns = {}
    for name in ARROW_SCHEMA.names:
        if name == "index":
            columns[name] = pa.array(index)
        elif name == "time":
            columns[name] = pa.array(index * 1000 + delays)
        else:
            middle = body.get(name)
            parts = [pa.array([r.get(name) for r in head_rows], ARROW_SCHEMA.field(name).type)]
            if middle is None:
                parts.append(pa.nulls(n, ARROW_SCHEMA.field(name).type))
            else:
                parts.append(middle if isinstance(middle, pa.Array)
                             else pa.array(middle, ARROW_SCHEMA.field(name).type))
            parts.append(pa.array([r.get(name) for r in tail_rows], ARROW_SCHEMA.field(name).type))
            columns[name] = pa.concat_arrays(parts)
    return pa.table(columns, schema=ARROW_SCHEMA)
