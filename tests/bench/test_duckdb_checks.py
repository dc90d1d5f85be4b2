"""The DuckDB yardstick of `bench check` counts what the checkers count on the bench's
histories: nothing on a clean one, each injected anomaly once, on every mix (the mixes
bring cumulative acks, failovers, redeliveries and splits)."""

from __future__ import annotations

from pathlib import Path

import pytest

from checkers import mixes, synthetic
from checkers.synthetic import INJECTABLE
from starquake.bench.duckdb_checks import QUERIED, duckdb_counts


def _write(mix: str, inject: dict[str, int], path: Path) -> None:
    if mix == "simple":
        synthetic.write_parquet(synthetic.SyntheticSpec(messages=20_000, seed=7,
                                                        inject=inject), path)
    else:
        mixes.write_parquet(mixes.scaled(mixes.MIXES[mix], 60_000), inject, path)


@pytest.mark.parametrize("mix", ["simple", *mixes.MIXES])
@pytest.mark.parametrize("injected", [0, 3])
def test_the_queries_count_the_injected_anomalies(tmp_path: Path, mix: str,
                                                  injected: int) -> None:
    path = tmp_path / "history.parquet"
    _write(mix, dict.fromkeys(INJECTABLE, injected) if injected else {}, path)
    assert duckdb_counts(path).counts == dict.fromkeys(QUERIED, injected)
