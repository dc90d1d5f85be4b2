"""The admin driver's choice of split or merge (pure): it never asks for a change the
controller must refuse, keeps the number of active segments between one and four, and
the seed fixes the choice for a given layout."""

from __future__ import annotations

import random
from typing import Any

from harness.workloads.scalable import segment_of, service_urls
from harness.workloads.scalable_layout import MAX_ACTIVE, choose_change


def _layout(*ranges: tuple[int, int], sealed: tuple[tuple[int, int], ...] = ()) -> dict[str, Any]:
    segments = {}
    for n, (start, end) in enumerate([*sealed, *ranges]):
        segments[str(n)] = {"segmentId": n, "hashRange": {"start": start, "end": end},
                            "state": "SEALED" if n < len(sealed) else "ACTIVE"}
    return {"epoch": 3, "segments": segments}


def test_one_active_segment_is_split() -> None:
    layout = _layout((0, 65535), sealed=((0, 32767), (32768, 65535)))
    for seed in range(20):
        change = choose_change(random.Random(seed), layout)
        assert change is not None and (change.f, change.segments) == ("split", (2,))


def test_at_the_most_active_segments_two_neighbours_are_merged() -> None:
    quarters = [(q * 16384, q * 16384 + 16383) for q in range(MAX_ACTIVE)]
    layout = _layout(*reversed(quarters))  # ids out of hash order: neighbours by range
    neighbours = {(3, 2), (2, 1), (1, 0)}
    for seed in range(20):
        change = choose_change(random.Random(seed), layout)
        assert change is not None and change.f == "merge" and change.segments in neighbours
        assert change.value == ",".join(map(str, change.segments))


def test_a_single_hash_segment_is_never_split() -> None:
    layout = _layout((0, 0), (1, 65535))
    changes = {choose_change(random.Random(seed), layout) for seed in range(40)}
    assert all(c is not None and c.segments != (0,) for c in changes)
    assert {c.f for c in changes if c is not None} == {"split", "merge"}


def test_the_seed_fixes_the_choice() -> None:
    layout = _layout((0, 30000), (30001, 65535))
    assert [choose_change(random.Random(7), layout) for _ in range(3)] == \
        [choose_change(random.Random(7), layout)] * 3


def test_names_the_client_takes_apart() -> None:
    assert service_urls("pulsar://a:1,b:2") == ["pulsar://a:1", "pulsar://b:2"]
    assert segment_of("segment://public/default/orders/4000-9fff-11") == 11
