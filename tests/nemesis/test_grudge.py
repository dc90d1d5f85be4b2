"""Partition shapes: the grudge each draws, for any node count the shape accepts."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nemesis.grudge import (
    Grudge,
    ShapeNotApplicable,
    bridge,
    complete_grudge,
    cut,
    isolate,
    majorities_ring,
    random_halves,
)

NODES = [f"n{i}" for i in range(1, 6)]


def nodes_of(count: int) -> list[str]:
    return [f"n{i}" for i in range(1, count + 1)]


def heard(grudge: Grudge, node: str, nodes: list[str]) -> set[str]:
    return set(nodes) - grudge.get(node, frozenset())


def symmetric(grudge: Grudge) -> bool:
    return all(node in grudge.get(other, frozenset())
               for node, others in grudge.items() for other in others)


def test_complete_grudge_keeps_each_component_whole() -> None:
    grudge = complete_grudge([["n1", "n2"], ["n3"]])
    assert grudge == {"n1": {"n3"}, "n2": {"n3"}, "n3": {"n1", "n2"}}


def test_isolate_cuts_the_target_from_everyone() -> None:
    grudge = isolate(NODES, "n3")
    assert grudge["n3"] == set(NODES) - {"n3"}
    assert all(grudge[n] == {"n3"} for n in NODES if n != "n3")


def test_isolate_names_an_unknown_target() -> None:
    with pytest.raises(ShapeNotApplicable, match="'n9' is not one of"):
        isolate(NODES, "n9")


@given(st.integers(2, 9), st.integers())
def test_random_halves_are_a_minority_and_a_majority(count: int, seed: int) -> None:
    nodes = nodes_of(count)
    grudge = random_halves(nodes, random.Random(seed))
    sides = {frozenset(heard(grudge, n, nodes)) for n in nodes}
    assert len(sides) == 2
    small, large = sorted(sides, key=len)
    assert len(small) == count // 2 and small | large == set(nodes)
    assert symmetric(grudge)
    assert random_halves(nodes, random.Random(seed)) == grudge  # seeded: reproducible


@given(st.integers(3, 9), st.integers())
def test_bridge_node_hears_both_halves_that_do_not_hear_each_other(count: int, seed: int
                                                                    ) -> None:
    nodes = nodes_of(count)
    grudge = bridge(nodes, random.Random(seed))
    (bridge_node,) = [n for n in nodes if not grudge[n]]
    assert all(bridge_node not in others for others in grudge.values())
    sides = {frozenset(heard(grudge, n, nodes)) for n in nodes if n != bridge_node}
    assert len(sides) == 2 and symmetric(grudge)


@given(st.integers(4, 11), st.integers())
def test_majorities_ring_gives_each_node_its_own_majority(count: int, seed: int) -> None:
    nodes = nodes_of(count)
    grudge = majorities_ring(nodes, random.Random(seed))
    views = [frozenset(heard(grudge, n, nodes)) for n in nodes]
    assert all(len(view) > count // 2 and len(view) < count for view in views)
    assert len(set(views)) == count
    assert symmetric(grudge)


def test_majorities_ring_needs_four_nodes() -> None:
    with pytest.raises(ShapeNotApplicable, match="at least 4 nodes"):
        majorities_ring(NODES[:3], random.Random(1))


def test_cut_separates_two_sides_and_keeps_each_whole() -> None:
    grudge = cut(["b1", "b2"], ["z1"])
    assert grudge == {"b1": {"z1"}, "b2": {"z1"}, "z1": {"b1", "b2"}}
    with pytest.raises(ShapeNotApplicable, match="disjoint"):
        cut(["b1"], ["b1", "z1"])
