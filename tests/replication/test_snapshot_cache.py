"""The per-subscription snapshot cache: bounded, ordered, and never ahead of mark-delete."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from impl.mutants import Mutants
from impl.replication.markers import Snapshot
from impl.replication.snapshot_cache import ReplicatedSubscriptionSnapshotCache
from impl.storage.api import Position


def snapshot(entry: int) -> Snapshot:
    return Snapshot(f"s{entry}", Position(1, entry), {"b": Position(2, entry * 10)}, "a")


def test_the_newest_snapshot_at_or_before_mark_delete_is_used_once() -> None:
    cache = ReplicatedSubscriptionSnapshotCache("sub")
    for entry in (3, 6, 9):
        cache.add_new_snapshot(snapshot(entry))
    assert cache.advanced_mark_delete(Position(1, 2)) is None
    assert cache.advanced_mark_delete(Position(1, 7)) == snapshot(6)
    assert cache.snapshots() == [snapshot(9)]
    assert cache.advanced_mark_delete(Position(1, 8)) is None
    assert cache.advanced_mark_delete(Position(1, 9)) == snapshot(9)


def test_an_overflowing_cache_drops_its_oldest() -> None:
    cache = ReplicatedSubscriptionSnapshotCache("sub", max_snapshots=2)
    for entry in (3, 6, 9):
        cache.add_new_snapshot(snapshot(entry))
    assert cache.snapshots() == [snapshot(6), snapshot(9)]


def test_a_snapshot_read_again_after_one_was_used_is_ignored() -> None:
    cache = ReplicatedSubscriptionSnapshotCache("sub")
    cache.add_new_snapshot(snapshot(6))
    assert cache.advanced_mark_delete(Position(1, 6)) == snapshot(6)
    cache.add_new_snapshot(snapshot(3))
    cache.add_new_snapshot(snapshot(6))
    assert cache.advanced_mark_delete(Position(1, 8)) is None


operations = st.lists(st.one_of(st.tuples(st.just("add"), st.integers(0, 60)),
                                st.tuples(st.just("ack"), st.integers(0, 60))), max_size=60)


@given(st.integers(1, 12), operations)
def test_bounded_ordered_and_monotone(size: int, ops: list[tuple[str, int]]) -> None:
    cache = ReplicatedSubscriptionSnapshotCache("sub", max_snapshots=size)
    mark_delete = -1
    used: list[Position] = []
    for op, entry in ops:
        if op == "add":
            cache.add_new_snapshot(snapshot(entry))
        else:
            mark_delete = max(mark_delete, entry)
            held = [s.local_position for s in cache.snapshots()]
            chosen = cache.advanced_mark_delete(Position(1, mark_delete))
            eligible = [p for p in held if p <= Position(1, mark_delete)]
            assert (chosen.local_position if chosen else None) == (eligible[-1] if eligible
                                                                   else None)
            if chosen:
                used.append(chosen.local_position)
        positions = [s.local_position for s in cache.snapshots()]
        assert len(positions) <= size
        assert positions == sorted(set(positions))
    assert used == sorted(set(used))


def test_mutant_update_past_mark_delete_hands_out_a_snapshot_beyond_it() -> None:
    cache = ReplicatedSubscriptionSnapshotCache("sub", mutants=Mutants.of(
        ["update-past-mark-delete"]))
    for entry in (3, 6, 9):
        cache.add_new_snapshot(snapshot(entry))
    chosen = cache.advanced_mark_delete(Position(1, 7))
    assert chosen is not None and chosen.local_position > Position(1, 7)
