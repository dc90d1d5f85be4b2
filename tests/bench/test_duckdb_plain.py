"""The plain four-question query, the end-to-end bench's second DuckDB baseline, answers
`lost`, `unexpected` and `failed-delivered` as the checkers do on every mix, and counts at
least the checker's `duplicate` (it excuses nothing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from checkers import mixes
from checkers.synthetic import INJECTABLE
from starquake.bench.duckdb_plain import VERIFIED, plain_counts


@pytest.mark.parametrize("mix", list(mixes.MIXES))
@pytest.mark.parametrize("injected", [0, 3])
def test_the_plain_query_answers_the_three_verified_questions_exactly(
        tmp_path: Path, mix: str, injected: int) -> None:
    path = tmp_path / "history.parquet"
    inject = dict.fromkeys(INJECTABLE, injected) if injected else {}
    mixes.write_parquet(mixes.scaled(mixes.MIXES[mix], 60_000), inject, path)
    counts = plain_counts(path).counts
    assert {name: counts[name] for name in VERIFIED} == dict.fromkeys(VERIFIED, injected)
    assert counts["duplicate"] >= injected
