"""A history written in copies (`checkers.scale_history`) holds exactly k times its
anomalies, and each copy is the run again under names of its own: on the example run, on
every case of the contract's anomalies (and their legal twins, in which copying must make
nothing), and on three explore runs that found something (`histories/`: a migration that
lost messages, with unlinked replication and broker health readings; a scalable topic
whose consumers were reassigned; a topic whose acks were not applied, judged on cursor
readings after the drain). A scaler that leaves a name shared lets the copies meet, and the
counts show it."""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from checkers.anomaly import CheckSettings
from checkers.check import check_runs
from checkers.load import prepare
from checkers.scale_history import RENAMED, copies_for, parquet_copy, write_copies
from history.writer import HistoryWriter
from starquake.bench.duckdb_checks import duckdb_counts
from tests.checkers.builder import prepared_cases
from tests.checkers.test_anomalies import CASES, META

COPIES = 3
EXAMPLE = Path(str(files("history").joinpath("examples/split-topic/history.jsonl")))
REAL_RUNS = sorted((Path(__file__).parent / "histories").glob("*.jsonl.gz"))
WITH_ANOMALIES = [name for name, (_, expected) in CASES.items() if any(expected.values())]


def _real_run(fixture: Path, directory: Path) -> Path:
    """An explore run's history, unpacked as a run directory's `history.jsonl`."""
    directory.mkdir()
    (directory / "history.jsonl").write_bytes(gzip.decompress(fixture.read_bytes()))
    return directory


def _case(name: str, directory: Path) -> Path:
    """The Parquet history of one anomaly case."""
    directory.mkdir()
    return prepared_cases({name: CASES[name][0]}, directory, META)[name].parquet


def _copied(original: Path, directory: Path, renamed: Sequence[str] = RENAMED) -> Path:
    scaled = directory / "copies" / "history.parquet"
    scaled.parent.mkdir(parents=True)
    write_copies(original, scaled, COPIES, renamed)
    return scaled


def _untagged(event: dict[str, Any], copy: int) -> dict[str, Any]:
    """The event with copy `copy`'s tag taken off every name that must carry it (a test
    fails here on a name without it) and its index dropped. The example's details name
    nothing a copy renames."""
    tag = f"c{copy}-"

    def untag(text: str) -> str:
        scheme, separator, rest = text.rpartition("://")
        assert rest.startswith(tag), (text, copy)
        return scheme + separator + rest.removeprefix(tag)

    named = {name: untag(event[name]) for name in RENAMED if event[name] is not None}
    return {**event, **named, "index": None}


def test_each_copy_is_the_run_again_under_its_own_names(tmp_path: Path) -> None:
    """Every event of the example is written once per copy, the copies' events in turn,
    each under names tagged with its copy (so no two copies share a topic, a value, a
    process, a subscription or a consumer) and otherwise as it was; `meta` is written
    once."""
    original = parquet_copy(EXAMPLE, tmp_path / "original")
    events = pq.read_table(original).to_pylist()
    copies = pq.read_table(_copied(original, tmp_path)).to_pylist()
    assert [e["index"] for e in copies] == list(range(len(copies)))
    meta, *rest = events
    assert copies[0] == meta
    assert [_untagged(e, n % COPIES) for n, e in enumerate(copies[1:])] == [
        {**e, "index": None} for e in rest for _ in range(COPIES)]


def test_the_faults_and_the_meta_event_are_written_once(tmp_path: Path) -> None:
    """A real run's nemesis operations stand for the same fault in every copy."""
    original = parquet_copy(_real_run(REAL_RUNS[0], tmp_path / "run"), tmp_path / "original")
    events = pq.read_table(original, columns=["process", "f"]).to_pylist()
    once = sum(e["process"] == "nemesis" or e["f"] == "meta" for e in events)
    assert once > 2
    scaled = pq.read_table(_copied(original, tmp_path), columns=["process", "f"]).to_pylist()
    assert len(scaled) == COPIES * (len(events) - once) + once
    assert sum(e["process"] == "nemesis" or e["f"] == "meta" for e in scaled) == once


def test_the_names_in_a_detail_are_the_copys_own(tmp_path: Path) -> None:
    """Full topic names anywhere in a `detail`, and a health reading's broker and a
    replacing consumer's predecessor, take the tag their columns take, in either JSON
    spelling; the rest of the detail stays as it was."""
    writer = HistoryWriter(tmp_path / "history.jsonl")
    writer.record("observer", "ok", "health", value="a-broker1",
                  detail={"broker": "a-broker1", "answer": "unhealthy",
                          "reason": "topic persistent://t/ns/x is not served"})
    writer.record("p0", "invoke", "subscribe", topic="persistent://t/ns/x", value="s",
                  detail='{"mode": "shared", "replaces": "c0"}')
    writer.close()
    scaled = pq.read_table(_copied(parquet_copy(writer.path, tmp_path / "original"), tmp_path))
    assert scaled.column("detail").to_pylist()[:2] == [
        '{"broker":"c0-a-broker1","answer":"unhealthy",'
        '"reason":"topic persistent://c0-t/ns/x is not served"}',
        '{"broker":"c1-a-broker1","answer":"unhealthy",'
        '"reason":"topic persistent://c1-t/ns/x is not served"}']
    assert scaled.column("detail").to_pylist()[-1] == '{"mode": "shared", "replaces": "c2-c0"}'
    assert scaled.column("topic").to_pylist()[-1] == "persistent://c2-t/ns/x"


def _counts_scale(original: Path, scaled: Path) -> bool:
    """DuckDB counts in the copies exactly COPIES times what it counts in the original."""
    counts = duckdb_counts(original).counts
    return duckdb_counts(scaled).counts == {name: COPIES * n for name, n in counts.items()}


@pytest.mark.slow  # 83 cases, each queried twice by DuckDB: over a minute on 2 cores
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_copies_of_an_anomaly_case_count_k_times_its_anomalies(tmp_path: Path,
                                                                    name: str) -> None:
    original = _case(name, tmp_path / "case")
    assert _counts_scale(original, _copied(original, tmp_path))


@pytest.mark.parametrize("fixture", REAL_RUNS, ids=[p.name for p in REAL_RUNS])
def test_the_copies_of_a_real_run_count_k_times_its_anomalies(tmp_path: Path,
                                                               fixture: Path) -> None:
    original = parquet_copy(_real_run(fixture, tmp_path / "run"), tmp_path / "original")
    assert _counts_scale(original, _copied(original, tmp_path))


@pytest.mark.parametrize(("shared", "case"), [
    ("topic", "lost"),  # each copy's subscription misses the other copies' messages
    ("value", "failed-delivered"),  # counted by distinct value: the copies' are one
    ("process", "lost"),  # the copies' invokes of one process pair with each other
])
def test_copies_that_share_a_name_meet(tmp_path: Path, shared: str, case: str) -> None:
    """The twin: a scaler that leaves one name shared changes the counts."""
    original = _case(case, tmp_path / "case")
    renamed = [name for name in RENAMED if name != shared]
    assert not _counts_scale(original, _copied(original, tmp_path, renamed))


def test_enough_copies_make_the_events_asked_for() -> None:
    assert [copies_for(events, 506) for events in (1, 506, 507, 2_000_000)] == [
        1, 1, 2, 3953]


@pytest.mark.spark
def test_the_checkers_count_k_times_in_the_copies(spark: SparkSession,
                                                  tmp_path: Path) -> None:
    """The checkers themselves, DuckDB's queries aside (`reassigned` and `zombie-broker`
    have none): every anomaly case and every real run, with its copies, in one job."""
    (tmp_path / "cases").mkdir()
    originals = prepared_cases({name: CASES[name][0] for name in WITH_ANOMALIES},
                               tmp_path / "cases", META)
    for fixture in REAL_RUNS:
        run = _real_run(fixture, tmp_path / fixture.name)
        originals[fixture.name] = prepare(parquet_copy(run, run / "original"))
    copies = {f"{name} copies": prepare(_copied(prepared.parquet, tmp_path / "copies" / name))
              for name, prepared in originals.items()}
    counts = {result.run: {checker: found["count"] for checker, found
                           in result.results["checkers"].items()}
              for result in check_runs(spark, {**originals, **copies}, CheckSettings())}
    for name in originals:
        assert any(counts[name].values()), name
        assert counts[f"{name} copies"] == {checker: COPIES * n
                                            for checker, n in counts[name].items()}, name
