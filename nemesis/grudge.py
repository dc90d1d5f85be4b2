"""Partition shapes as grudges: pure functions of node names (and a seeded random source).

A grudge maps each node to the nodes it must not hear from, as in Jepsen's
`jepsen.nemesis`: applying it drops every packet a node receives from the nodes it holds a
grudge against. All shapes here are symmetric (if a drops b, b drops a), so no TCP
connection survives across a cut in either direction.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable, Sequence

from history.errors import BadInput

Grudge = dict[str, frozenset[str]]


class ShapeNotApplicable(BadInput):
    """The shape cannot be drawn on these nodes (too few, or an unknown target)."""


def _distinct(nodes: Iterable[str], shape: str, at_least: int) -> list[str]:
    unique = list(dict.fromkeys(nodes))
    if len(unique) < at_least:
        raise ShapeNotApplicable(f"{shape} needs at least {at_least} nodes, got {unique}")
    return unique


def complete_grudge(components: Sequence[Collection[str]]) -> Grudge:
    """Every node hears only the nodes of its own component."""
    everyone = frozenset(n for component in components for n in component)
    grudge: Grudge = {}
    for component in components:
        for node in component:
            grudge[node] = everyone - frozenset(component)
    return grudge


def isolate(nodes: Iterable[str], target: str) -> Grudge:
    """`target` hears nobody and nobody hears it."""
    others = _distinct(nodes, "isolate", 2)
    if target not in others:
        raise ShapeNotApplicable(f"isolate: {target!r} is not one of {others}")
    return complete_grudge([[target], [n for n in others if n != target]])


def random_halves(nodes: Iterable[str], rng: random.Random) -> Grudge:
    """Shuffle, then cut into a smaller and a larger half (a minority and a majority)."""
    shuffled = _distinct(nodes, "random halves", 2)
    rng.shuffle(shuffled)
    middle = len(shuffled) // 2
    return complete_grudge([shuffled[:middle], shuffled[middle:]])


def bridge(nodes: Iterable[str], rng: random.Random) -> Grudge:
    """Two halves that cannot hear each other, and one node (the bridge) that hears and is
    heard by everyone: each half plus the bridge is a majority when the count is odd."""
    shuffled = _distinct(nodes, "bridge", 3)
    rng.shuffle(shuffled)
    middle = len(shuffled) // 2
    left, bridge_node, right = shuffled[:middle], shuffled[middle], shuffled[middle + 1:]
    grudge = complete_grudge([left, right])
    grudge[bridge_node] = frozenset()
    return grudge


def majorities_ring(nodes: Iterable[str], rng: random.Random) -> Grudge:
    """Nodes in a shuffled ring; each hears itself and the nodes within `reach` places on
    either side, a majority, and no two nodes hear the same set. Needs 4 nodes: with 3,
    every majority is everyone."""
    ring = _distinct(nodes, "majorities ring", 4)
    rng.shuffle(ring)
    count = len(ring)
    majority = count // 2 + 1
    reach = majority // 2  # 2 * reach + 1 >= majority, and < count so someone is cut
    grudge: Grudge = {}
    for i, node in enumerate(ring):
        heard = {ring[(i + step) % count] for step in range(-reach, reach + 1)}
        grudge[node] = frozenset(ring) - heard
    return grudge


def cut(side_a: Iterable[str], side_b: Iterable[str]) -> Grudge:
    """The nodes of `side_a` and of `side_b` cannot hear each other; each side is intact
    (brokers from ZooKeeper; one cluster from another across the WAN)."""
    a, b = list(dict.fromkeys(side_a)), list(dict.fromkeys(side_b))
    if not a or not b or set(a) & set(b):
        raise ShapeNotApplicable(f"a cut needs two non-empty disjoint sides, got {a} and {b}")
    grudge: Grudge = {node: frozenset(b) for node in a}
    grudge.update({node: frozenset(a) for node in b})
    return grudge
