"""The Arrow table: the events in time order, each column decoded from its codes a chunk
of rows at a time, the client processes named `p0`, `p1`, ... as they first appear."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from checkers.mixes.base import (
    _AUDIT_CLUSTER,
    _ERRORS,
    _F_NAMES,
    _KIND_SHIFT,
    _RESERVED,
    _TYPE_NAMES,
    BROKERS,
    CLUSTERS,
    SUBSCRIPTIONS,
    TOPIC,
    _text,
)
from checkers.mixes.events import _Events
from checkers.mixes.padding import _key_texts, _value_texts
from checkers.mixes.run import _Run
from checkers.mixes.sends import _Sends
from checkers.mixes.spec import MixSpec
from history.schema import ARROW_SCHEMA

_CHUNK = 1 << 21
"""Rows converted to Arrow at a time: bounds what the conversion holds besides the table."""


def _dictionary_column(codes: np.ndarray, dictionary: pa.Array) -> pa.Array:
    """Texts by code into `dictionary`; a negative code is absent."""
    indices = pa.array(codes, type=pa.int64(), mask=codes < 0)
    return pa.DictionaryArray.from_arrays(indices, dictionary).dictionary_decode()


def _process_names(codes: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, pa.Array]:
    """Codes into a dictionary of the reserved names, then `p0`, `p1`, ... for client
    processes in the order they first appear (events in `order`)."""
    client = codes >= 0
    kind, ids = codes >> _KIND_SHIFT, codes & ((1 << _KIND_SHIFT) - 1)
    per_kind = np.zeros(int(kind.max(initial=0)) + 1, dtype=np.int64)
    np.maximum.at(per_kind, kind[client], ids[client] + 1)
    dense = np.where(client, (np.cumsum(per_kind) - per_kind)[np.maximum(kind, 0)] + ids, -1)
    first_seen = np.full(int(per_kind.sum()), len(codes), dtype=np.int64)
    in_order = dense[order]
    seen = in_order >= 0
    np.minimum.at(first_seen, in_order[seen], np.flatnonzero(seen))
    rank = np.empty(len(first_seen), dtype=np.int64)
    rank[np.argsort(first_seen, kind="stable")] = np.arange(len(first_seen))
    named = np.where(client, len(_RESERVED) + rank[np.maximum(dense, 0)], -1 - codes)
    return named, pa.array([*_RESERVED, *(f"p{n}" for n in range(len(first_seen)))])


def _position_texts(ledger: np.ndarray, entry: np.ndarray) -> pa.Array:
    joined = pc.binary_join_element_wise(_text(ledger), ":", _text(entry), "")
    return pc.if_else(pa.array(ledger >= 0), joined, pa.scalar(None, pa.string()))


def _table(spec: MixSpec, events: _Events, run: _Run, sends: _Sends) -> pa.Table:
    """The events in time order as Arrow columns, each converted a chunk of rows at a
    time so that little besides the table itself is held at once."""
    order = events.order()
    chunks = [order[start:start + _CHUNK] for start in range(0, len(order), _CHUNK)]
    messages = len(sends.key)
    dictionaries: dict[str, pa.Array] = {
        "type": pa.array(_TYPE_NAMES), "f": pa.array(_F_NAMES), "cluster": pa.array(CLUSTERS),
        "node": pa.array([f"{c}-broker{n}" for c in CLUSTERS for n in range(1, BROKERS + 1)]),
        "topic": pa.array([TOPIC]), "subscription": pa.array(SUBSCRIPTIONS),
        "consumer": pa.array([*run.consumers.names, f"audit-{CLUSTERS[_AUDIT_CLUSTER]}"]),
        "key": _key_texts(spec, np.arange(len(sends.hashes))),
        "error": pa.array(_ERRORS), "detail": events.details.dictionary(),
        "value": pa.concat_arrays([_value_texts(spec, sends.producer, sends.seq),
                                   events.texts.dictionary()])}
    columns: dict[str, pa.ChunkedArray] = {
        "index": pa.chunked_array([pa.array(np.arange(len(order), dtype=np.int64))])}
    for name in ARROW_SCHEMA.names[1:]:
        if name == "position":
            ledger, entry = events.column("ledger"), events.column("entry")
            columns[name] = pa.chunked_array(
                [_position_texts(ledger[rows], entry[rows]) for rows in chunks], pa.string())
            continue
        codes = events.column(name)
        if name == "process":
            codes, dictionaries[name] = _process_names(codes, order)
        elif name == "value":
            codes = np.where(codes <= -2, messages - 2 - codes, codes)
        if name in dictionaries:
            columns[name] = pa.chunked_array(
                [_dictionary_column(codes[rows], dictionaries[name]) for rows in chunks],
                pa.string())
        else:
            columns[name] = pa.chunked_array(
                [pa.array(codes[rows].astype(np.int64),
                          mask=None if name == "time" else codes[rows] < 0) for rows in chunks],
                pa.int64())
    return pa.table(columns, schema=ARROW_SCHEMA)
