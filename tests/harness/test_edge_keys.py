"""Edge keys: each hashes exactly where it is meant to, every edge of the newest layout
is handed out in turn, and a share of 0 leaves every planned key alone."""

from __future__ import annotations

import random

from harness.workloads.edge_keys import EdgeKeys, edge_hashes, key_hashing_to
from history.schema import key_hash

TWO_SEGMENTS = [(0, 0x7FFF), (0x8000, 0xFFFF)]


def test_a_found_key_hashes_onto_the_asked_hash() -> None:
    for hash_value in (0, 1, 0x7FFF, 0x8000, 0xBFFF, 0xFFFF):
        assert key_hash(key_hashing_to(hash_value)) == hash_value


def test_the_edges_are_every_range_end_once() -> None:
    assert edge_hashes([(0x8000, 0xFFFF), (0, 0x7FFF), (5, 5)]) == (0, 5, 0x7FFF, 0x8000, 0xFFFF)


def test_every_edge_of_the_newest_layout_is_handed_out_in_turn() -> None:
    edges = EdgeKeys(1.0)
    rng = random.Random(1)
    assert edges.key_for("k1", rng) == "k1"  # no layout learnt yet
    edges.learn(3, TWO_SEGMENTS)
    edges.learn(2, [(0, 0xFFFF)])  # older than the one learnt: ignored
    handed = [key_hash(edges.key_for("k1", rng)) for _ in range(8)]
    assert handed == [0, 0x7FFF, 0x8000, 0xFFFF] * 2


def test_a_share_keys_about_that_share_of_sends_and_zero_none() -> None:
    some, none = EdgeKeys(0.25), EdgeKeys(0.0)
    for edges in (some, none):
        edges.learn(0, TWO_SEGMENTS)
    rng = random.Random(7)
    keyed = sum(some.key_for("k1", rng) != "k1" for _ in range(4000))
    assert 800 < keyed < 1200
    assert all(none.key_for("k1", rng) == "k1" for _ in range(100))
