"""The snapshot builder: one round for two clusters, two beyond, never a partial snapshot."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from impl.mutants import NONE, Mutants
from impl.replication.markers import Snapshot, SnapshotRequest, SnapshotResponse
from impl.replication.snapshot_builder import ReplicatedSubscriptionsSnapshotBuilder
from impl.storage.api import Position


def builder(remotes: list[str], mutants: Mutants = NONE) -> ReplicatedSubscriptionsSnapshotBuilder:
    return ReplicatedSubscriptionsSnapshotBuilder("s1", "a", remotes, started_at=0.0,
                                                  published_position=Position(1, 0),
                                                  mutants=mutants)


def response(cluster: str, entry: int, snapshot_id: str = "s1") -> SnapshotResponse:
    return SnapshotResponse(snapshot_id, cluster, Position(9, entry), requester="a")


def test_two_clusters_complete_with_the_only_response() -> None:
    b = builder(["b"])
    assert b.request() == SnapshotRequest("s1", "a")
    assert b.receive_response(response("b", 5), Position(1, 7)) == Snapshot(
        "s1", Position(1, 7), {"b": Position(9, 5)}, "a")


def test_three_clusters_take_two_rounds_keeping_first_round_positions() -> None:
    b = builder(["b", "c"])
    assert b.receive_response(response("b", 5), Position(1, 7)) is None
    assert b.receive_response(response("c", 6), Position(1, 8)) == SnapshotRequest("s1", "a")
    assert b.receive_response(response("c", 60), Position(1, 20)) is None
    assert b.receive_response(response("b", 50), Position(1, 21)) == Snapshot(
        "s1", Position(1, 21), {"b": Position(9, 5), "c": Position(9, 6)}, "a")


def test_strangers_repeats_and_other_snapshots_change_nothing() -> None:
    b = builder(["b", "c"])
    assert b.receive_response(response("b", 5), Position(1, 7)) is None
    for ignored in (response("b", 6), response("x", 1), response("c", 1, snapshot_id="s0")):
        assert b.receive_response(ignored, Position(1, 8)) is None
    assert b.round == 1


responses = st.lists(st.tuples(st.sampled_from(["b", "c", "d", "x"]), st.integers(0, 99)),
                     max_size=20)


def _feed(b: ReplicatedSubscriptionsSnapshotBuilder,
          sequence: list[tuple[str, int]]) -> list[tuple[int, object]]:
    """Outcomes with the number of distinct remote responders seen so far in that round."""
    outcomes, seen = [], set()
    for n, (cluster, entry) in enumerate(sequence):
        if cluster in b.remote_clusters:
            seen.add(cluster)
        outcome = b.receive_response(response(cluster, entry), Position(1, n))
        outcomes.append((len(seen), outcome))
        if isinstance(outcome, SnapshotRequest):
            seen = set()
    return outcomes


@given(st.sampled_from([["b"], ["b", "c"], ["b", "c", "d"]]), responses)
def test_never_complete_without_every_remote_in_every_round(remotes: list[str],
                                                             sequence: list[tuple[str, int]]
                                                             ) -> None:
    b = builder(remotes)
    outcomes = _feed(b, sequence)
    for seen, outcome in outcomes:
        if outcome is not None:
            assert seen == len(remotes)
    completed = [o for _, o in outcomes if isinstance(o, Snapshot)]
    second_rounds = [o for _, o in outcomes if isinstance(o, SnapshotRequest)]
    assert len(completed) <= 1
    if completed:
        assert len(second_rounds) == (0 if len(remotes) == 1 else 1)
        assert set(completed[0].clusters) == set(remotes)


def test_mutant_partial_snapshot_completes_with_the_first_response() -> None:
    b = builder(["b", "c"], Mutants.of(["partial-snapshot"]))
    assert b.receive_response(response("c", 5), Position(1, 7)) == Snapshot(
        "s1", Position(1, 7), {"c": Position(9, 5)}, "a")


def test_mutant_single_round_completes_three_clusters_after_one_round() -> None:
    b = builder(["b", "c"], Mutants.of(["single-round"]))
    assert b.receive_response(response("b", 5), Position(1, 7)) is None
    assert isinstance(b.receive_response(response("c", 6), Position(1, 8)), Snapshot)
