"""The DuckDB yardstick of `bench check` counts what the checkers count: on the bench's
histories, nothing on a clean one and each injected anomaly once, on every mix (the mixes
bring cumulative acks, failovers, redeliveries and splits); and on every small history of
the contract's anomalies and of the client-contract probes, the checkers' exact count."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from checkers import mixes, synthetic
from checkers.anomaly import CheckSettings
from checkers.check import check_runs
from checkers.load import prepare
from checkers.synthetic import INJECTABLE
from starquake.bench.duckdb_checks import QUERIED, duckdb_counts
from tests.checkers import test_contract
from tests.checkers.builder import History, prepared_cases
from tests.checkers.test_anomalies import CASES, META


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
    assert duckdb_counts(path).counts == _each_injectable(injected)


def test_the_queries_count_hundreds_of_each_anomaly_in_the_untuned_mix(tmp_path: Path) -> None:
    """`bench check --anomalies`: many units of each anomaly, each on a key of its own
    among long keys and values, still each counted once."""
    path = tmp_path / "history.parquet"
    mixes.write_parquet(mixes.scaled(mixes.MIXES["untuned"], 100_000),
                        dict.fromkeys(INJECTABLE, 250), path)
    assert duckdb_counts(path).counts == _each_injectable(250)


def _each_injectable(injected: int) -> dict[str, int]:
    return {checker: injected if checker in INJECTABLE else 0 for checker in QUERIED}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_queries_count_what_the_checkers_count_on_every_anomaly_case(
        tmp_path: Path, name: str) -> None:
    """The small histories of the contract's anomalies (and their legal near twins) give
    the queries the checkers' exact counts. The differences are by design: without a
    completed drain the checkers leave `lost` undecided (counted 0), where a query just
    counts; and the queries do not excuse what an `unlink-replication` kept from a
    cluster (checkers/unreplicated.py), which the baseline's core questions leave out."""
    build, expected = CASES[name]
    history = History(tmp_path / "history.jsonl", scenario=name, seed=1, **META[name])
    build(history)
    parquet = prepare(history.close()).parquet
    counts = duckdb_counts(parquet).counts
    wanted = {checker: expected.get(checker, 0) for checker in QUERIED}
    events = pq.read_table(parquet, columns=["f", "type"]).to_pylist()
    if {"f": "drain", "type": "ok"} not in events or any(
            event["f"] == "unlink-replication" for event in events):
        wanted["lost"] = counts["lost"]
    assert counts == wanted


@pytest.mark.spark
def test_the_contract_query_counts_what_the_checker_counts_on_every_probe_case(
        spark: SparkSession, tmp_path: Path) -> None:
    """Passing and failing probes, probes that could not be judged (not counted by
    either), and JSON objects whose keys come in another order (equal to both)."""
    histories = prepared_cases(test_contract.CASES, tmp_path)
    results = {r.run: r.results for r in check_runs(spark, histories, CheckSettings())}
    counts = {name: duckdb_counts(prepared.parquet).counts["contract"]
              for name, prepared in histories.items()}
    assert counts == {name: results[name]["checkers"]["contract"]["count"]
                      for name in histories}
    assert sum(counts.values()) > len(test_contract.TWINS)
