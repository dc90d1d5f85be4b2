"""The DuckDB yardstick of `bench check` counts what the checkers count on the bench's
histories: nothing on a clean one, each injected anomaly once."""

from __future__ import annotations

from pathlib import Path

import pytest

from checkers.synthetic import INJECTABLE, SyntheticSpec, write_parquet
from starquake.bench.duckdb_checks import QUERIED, duckdb_counts


@pytest.mark.parametrize("injected", [0, 3])
def test_the_queries_count_the_injected_anomalies(tmp_path: Path, injected: int) -> None:
    path = tmp_path / "history.parquet"
    inject = dict.fromkeys(INJECTABLE, injected) if injected else {}
    write_parquet(SyntheticSpec(messages=20_000, seed=7, inject=inject), path)
    assert duckdb_counts(path).counts == dict.fromkeys(QUERIED, injected)
