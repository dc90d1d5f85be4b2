"""What producers send follows from the seed, and message ids never repeat in a run."""

from __future__ import annotations

import itertools

from harness.workloads.plan import message_plan


def _first(seed: int, worker: int, count: int = 200) -> list[tuple[str, str]]:
    return list(itertools.islice(message_plan(seed, worker, keys=8), count))


def test_the_same_seed_sends_the_same_keys_and_ids() -> None:
    assert _first(42, 0) == _first(42, 0)
    assert [k for k, _ in _first(42, 0)] != [k for k, _ in _first(43, 0)]
    assert {k for k, _ in _first(42, 0)} == {f"k{n}" for n in range(8)}


def test_message_ids_are_unique_across_workers() -> None:
    ids = [v for worker in range(4) for _, v in _first(42, worker)]
    assert len(ids) == len(set(ids)) == 800
