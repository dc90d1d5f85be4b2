"""The texts of keys and values: short names (`k{n}`, `w{producer}-{seq}`, `u{n}`), or,
when a spec asks for long ones, each name followed by `_` and pseudo-random letters and
digits up to the asked length. The name keeps a text unique (no name holds `_`); the
letters keep a long column from compressing to nothing, as a constant padding would
under Parquet's dictionary and run-length encodings. They are a function of the seed and
the key's or message's number alone, so a key is the same text whenever it is made
(`order` adds keys after the others)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from checkers.mixes.base import _text
from checkers.mixes.spec import MixSpec
from history.schema import key_hash

_ALPHABET = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz234567", dtype=np.uint8)
"""32 characters, so each byte of a drawn word picks one with its low five bits."""
_SEPARATOR = "_"
_KEYS, _VALUES, _STRAY_VALUES = range(3)
"""Streams of padding, one per kind of text, so that equal numbers draw unlike letters."""
_CHUNK_BYTES = 1 << 26
"""Letters drawn at a time: bounds what padding holds besides the result (and keeps a
chunk's offsets within 32 bits)."""


def _key_texts(spec: MixSpec, ids: np.ndarray) -> pa.Array:
    """Keys by id."""
    names = pc.binary_join_element_wise("k", _text(ids), "")
    return _padded(names, ids, spec.key_bytes, _stream(spec, _KEYS))


def _key_hashes(spec: MixSpec, ids: np.ndarray) -> np.ndarray:
    """The spec's hash (`misrouted`) of each key by id, which routes its sends."""
    return np.array([key_hash(text) for text in _key_texts(spec, ids).to_pylist()],
                    dtype=np.int64)


def _value_texts(spec: MixSpec, producer: np.ndarray, seq: np.ndarray) -> pa.Array:
    """The values sent, by message: each producer's numbered in send order."""
    names = pc.binary_join_element_wise("w", _text(producer), "-", _text(seq), "")
    return _padded(names, np.arange(len(producer)), spec.value_bytes, _stream(spec, _VALUES))


def _stray_values(spec: MixSpec, count: int) -> list[str]:
    """Values nobody sent (the injected `unexpected` deliveries), as long as sent ones."""
    numbers = np.arange(count)
    names = pc.binary_join_element_wise("u", _text(numbers), "")
    padded = _padded(names, numbers, spec.value_bytes, _stream(spec, _STRAY_VALUES))
    return [str(text) for text in padded.to_pylist()]


def _stream(spec: MixSpec, kind: int) -> int:
    return int(np.random.SeedSequence([spec.seed, kind]).generate_state(1, np.uint64)[0])


def _padded(names: pa.Array, numbers: np.ndarray, width: int, stream: int) -> pa.Array:
    """Each name padded to `width` bytes (a name that long or longer stays whole; 0: the
    names as they are), a chunk of names at a time."""
    if not width or not len(names):
        return names
    rows = max(1, _CHUNK_BYTES // width)
    return pa.concat_arrays([
        _padded_chunk(names.slice(start, rows), numbers[start:start + rows], width, stream)
        for start in range(0, len(names), rows)])


def _padded_chunk(names: pa.Array, numbers: np.ndarray, width: int, stream: int) -> pa.Array:
    """The names, `_` and letters, cut to `width`; a name as long as that, whole."""
    joined = pc.binary_join_element_wise(names, _letters(numbers, width, stream), _SEPARATOR)
    short = pc.less(pc.utf8_length(names), width)
    return pc.if_else(short, pc.utf8_slice_codeunits(joined, 0, width), names)


def _letters(numbers: np.ndarray, width: int, stream: int) -> pa.Array:
    """Per number, `width` characters of _ALPHABET: the bytes of splitmix64 words drawn
    for the number's own counters, built as one buffer rather than text by text."""
    words = -(-width // 8)
    counters = np.add.outer(numbers.astype(np.uint64) * np.uint64(words),
                            np.arange(words, dtype=np.uint64))
    drawn = _splitmix64(counters ^ np.uint64(stream)).view(np.uint8)[:, :width]
    data = _ALPHABET[drawn & 31]
    offsets = np.arange(len(numbers) + 1, dtype=np.int32) * np.int32(width)
    return pa.Array.from_buffers(pa.string(), len(numbers),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _splitmix64(counters: np.ndarray) -> np.ndarray:
    """splitmix64's output function: a bijection of 64-bit words that spreads consecutive
    counters over every bit (wrapping multiplication is what it asks for)."""
    mixed = counters + np.uint64(0x9E3779B97F4A7C15)
    mixed = (mixed ^ (mixed >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    mixed = (mixed ^ (mixed >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return np.asarray(mixed ^ (mixed >> np.uint64(31)))
