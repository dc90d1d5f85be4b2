"""Acknowledgement arithmetic for batch entries.

A batch entry is deleted from the cursor only once every message in it is acknowledged.
The client names parts of a batch either with `batch_index` or with an `ack_set`: a bit set
(64-bit words, least significant bit first) whose set bits are the messages still *not*
acknowledged, the same shape the broker puts into MESSAGE when it redelivers a partly
acknowledged batch. Both are checked against the stored entry's size before any set is
built from them.
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


class AckOutOfRange(ValueError):
    """An acknowledgement naming messages the entry does not hold."""


def check_within(message: MessageIdData, batch_size: int) -> None:
    """Raise `AckOutOfRange` unless every message `message` names lies in an entry of
    `batch_size` messages. The size is the stored entry's, never the client's `batch_size`
    field, so a client cannot make the broker build a set larger than a real batch."""
    if message.ack_set:
        if len(message.ack_set) > (batch_size + _WORD - 1) // _WORD:
            raise AckOutOfRange(f"an ack set of {len(message.ack_set)} words for a batch of "
                                f"{batch_size}")
        beyond = [i for i in bits_of(list(message.ack_set)) if i >= batch_size]
        if beyond:
            raise AckOutOfRange(f"ack set bit {beyond[0]} in a batch of {batch_size}")
    elif message.batch_index >= batch_size:
        raise AckOutOfRange(f"batch index {message.batch_index} in a batch of {batch_size}")


def remaining_after(message: MessageIdData, remaining: set[int] | None,
                    batch_size: int) -> set[int]:
    """Which messages of the entry stay unacknowledged after this acknowledgement.

    `remaining` is what was unacknowledged before (None: nothing acknowledged yet), and
    `batch_size` the stored entry's message count (`message` checked by `check_within`).
    Returns the empty set when the whole entry is acknowledged.
    """
    if message.ack_set:
        still = bits_of(list(message.ack_set))
        return still if remaining is None else remaining & still
    if message.batch_index < 0:
        return set()
    if remaining is None:
        remaining = set(range(batch_size))
    return remaining - {message.batch_index}


def covers_entry_through(message: MessageIdData, batch_size: int) -> bool:
    """Whether a cumulative acknowledgement at `message` covers its whole entry."""
    if message.ack_set:
        return not bits_of(list(message.ack_set))
    return message.batch_index < 0 or message.batch_index >= batch_size - 1
