"""Batch acknowledgement arithmetic (impl/broker/acks.py)."""

from __future__ import annotations

import pytest

from impl.broker.acks import (
    AckOutOfRange,
    bits_of,
    check_within,
    covers_entry_through,
    remaining_after,
    words_of,
)
from wire.pulsar_api_pb2 import MessageIdData


def message(batch_index: int = -1, ack_set: list[int] | None = None) -> MessageIdData:
    return MessageIdData(ledgerId=3, entryId=7, batch_index=batch_index, ack_set=ack_set or [])


def test_ack_sets_round_trip_through_signed_words() -> None:
    indices = {0, 5, 63, 64, 99}
    words = words_of(indices, 100)
    assert words[0] < 0  # bit 63 set: the word is negative as an int64
    assert bits_of(words) == indices


def test_an_entry_is_whole_only_when_every_message_is_acknowledged() -> None:
    left = remaining_after(message(batch_index=1), None, 3)
    assert left == {0, 2}
    left = remaining_after(message(batch_index=0), left, 3)
    assert left == {2}
    assert remaining_after(message(batch_index=2), left, 3) == set()
    assert remaining_after(message(), None, 3) == set()  # no batch index: the whole entry


def test_an_ack_set_names_what_is_still_unacknowledged() -> None:
    assert remaining_after(message(ack_set=words_of({1, 2}, 4)), None, 4) == {1, 2}
    assert remaining_after(message(ack_set=words_of({2}, 4)), {1, 2}, 4) == {2}


def test_an_ack_beyond_the_stored_batch_is_out_of_range() -> None:
    check_within(message(batch_index=2), 3)
    check_within(message(ack_set=words_of({63}, 64)), 64)
    with pytest.raises(AckOutOfRange, match="batch index 3"):
        check_within(message(batch_index=3), 3)
    with pytest.raises(AckOutOfRange, match="bit 5"):
        check_within(message(ack_set=words_of({5}, 8)), 3)
    with pytest.raises(AckOutOfRange, match="2 words"):
        check_within(message(ack_set=[0, 0]), 64)


def test_cumulative_ack_covers_its_entry_only_at_the_batchs_last_message() -> None:
    assert covers_entry_through(message(), 1)
    assert not covers_entry_through(message(batch_index=1), 3)
    assert covers_entry_through(message(batch_index=2), 3)
    assert covers_entry_through(message(ack_set=[0]), 3)
