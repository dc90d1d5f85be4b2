"""Position arithmetic and acknowledged ranges, without bookies."""

from __future__ import annotations

from impl.storage.api import Position
from impl.storage.positions import AckRanges, LedgerSequence, LedgerSpan

P = Position


def _sequence() -> LedgerSequence:
    # ledger 3: entries 0..2; ledger 5: empty; ledger 8: open, confirmed 0..1
    return LedgerSequence([LedgerSpan(3, 2), LedgerSpan(5, -1), LedgerSpan(8, 1, open=True)])


def test_next_position_skips_ledger_ends_and_empty_ledgers() -> None:
    ledgers = _sequence()
    assert ledgers.next_position(P(3, -1)) == P(3, 0)
    assert ledgers.next_position(P(3, 1)) == P(3, 2)
    assert ledgers.next_position(P(3, 2)) == P(8, 0)
    assert ledgers.next_position(P(8, 1)) == P(8, 2)  # where the next add lands
    assert ledgers.next_position(P(0, -1)) == P(3, 0)


def test_counting_and_listing_entries() -> None:
    ledgers = _sequence()
    assert ledgers.last_position == P(8, 1)
    assert ledgers.count_between(P(3, -1), P(8, 1)) == 5
    assert ledgers.count_between(P(3, 1), P(8, 0)) == 2
    assert list(ledgers.positions_from(P(3, 2))) == [P(3, 2), P(8, 0), P(8, 1)]
    assert ledgers.exists(P(8, 1)) and not ledgers.exists(P(8, 2)) and not ledgers.exists(P(5, 0))


def test_acknowledged_entries_merge_into_pulsar_ranges() -> None:
    acks = AckRanges()
    for entry in (5, 7, 6, 9):
        acks.add(P(3, entry))
    assert acks.ranges == [(P(3, 4), P(3, 7)), (P(3, 8), P(3, 9))]
    assert acks.contains(P(3, 6)) and not acks.contains(P(3, 4)) and not acks.contains(P(3, 8))


def test_mark_delete_swallows_ranges_across_a_ledger_boundary() -> None:
    ledgers = _sequence()
    acks = AckRanges()
    acks.add(P(3, 2))
    acks.add(P(8, 0))
    assert acks.ranges == [(P(3, 1), P(3, 2)), (P(8, -1), P(8, 0))]
    assert acks.advance(P(3, -1), ledgers) == P(3, -1)  # 3:0 and 3:1 still unacknowledged
    assert acks.count(ledgers) == 2
    assert acks.advance(P(3, 1), ledgers) == P(8, 0)  # nothing between 3:2 and 8:0
    assert acks.ranges == []
