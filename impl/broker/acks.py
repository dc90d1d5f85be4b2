"""Acknowledgement arithmetic for batch entries.

A batch entry is deleted from the cursor only once every message in it is acknowledged.
The client names parts of a batch either with `batch_index` or with an `ack_set`: a bit set
(64-bit words, least significant bit first) whose set bits are the messages still *not*
acknowledged, the same shape the broker puts into MESSAGE when it redelivers a partly
acknowledged batch.
"""

from __future__ import annotations

from wire.pulsar_api_pb2 import MessageIdData

_WORD = 64
_MASK = (1 << _WORD) - 1


def bits_of(words: list[int]) -> set[int]:
    """The set bits of an ack set (words arrive as signed int64)."""
    out = set()
    for w, word in enumerate(words):
        word &= _MASK
        while word:
            low = word & -word
            out.add(w * _WORD + low.bit_length() - 1)
            word ^= low
    return out


def words_of(indices: set[int], size: int) -> list[int]:
    """An ack set holding `indices`, as signed int64 words for the protobuf field."""
    words = [0] * ((size + _WORD - 1) // _WORD)
    for i in indices:
        words[i // _WORD] |= 1 << (i % _WORD)
    return [w - (1 << _WORD) if w >= 1 << (_WORD - 1) else w for w in words]


def remaining_after(message: MessageIdData, remaining: set[int] | None,
                    batch_size: int | None) -> set[int] | None:
    """Which messages of the entry stay unacknowledged after this acknowledgement.

    `remaining` is what was unacknowledged before (None: nothing acknowledged yet), and
    `batch_size` the entry's message count when known. Returns the empty set when the whole
    entry is acknowledged, None when the acknowledgement cannot be placed (a batch index of
    an entry of unknown size).
    """
    if message.ack_set:
        still = bits_of(list(message.ack_set))
        return still if remaining is None else remaining & still
    if message.batch_index < 0:
        return set()
    if remaining is None:
        size = batch_size or (message.batch_size if message.HasField("batch_size") else None)
        if size is None:
            return None
        remaining = set(range(size))
    return remaining - {message.batch_index}


def covers_entry_through(message: MessageIdData, batch_size: int | None) -> bool:
    """Whether a cumulative acknowledgement at `message` covers its whole entry."""
    if message.ack_set:
        return not bits_of(list(message.ack_set))
    if message.batch_index < 0:
        return True
    size = batch_size or (message.batch_size if message.HasField("batch_size") else None)
    return size is not None and message.batch_index >= size - 1
