"""The Arrow shuffle under the per-value, per-key and per-position finders, and the views
it reads: a group's rows must meet in one partition, and a view reads each operation
once, with its completion."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st

from checkers.load import prepare
from checkers.pairing import FACTS_SCHEMA, OPERATIONS_SCHEMA
from checkers.partitions import Scan, TextCodes, decide, gather, scatter_scans, text_hash
from checkers.views import ACKS, RECVS, SENDS, View
from tests.checkers.builder import History


@given(st.lists(st.text(max_size=90) | st.none(), min_size=1, max_size=20),
       st.lists(st.text(max_size=90), max_size=20))
def test_a_texts_hash_does_not_depend_on_the_batch_it_is_in(texts, others) -> None:
    alone = [int(text_hash(pa.chunked_array([[text]], pa.string()))[0]) for text in texts]
    batch = text_hash(pa.chunked_array([texts, others], pa.string()))
    assert [int(h) for h in batch[:len(texts)]] == alone


def test_a_null_text_hashes_as_the_empty_one() -> None:
    hashes = text_hash(pa.chunked_array([[None, "", "a"]], pa.string()))
    assert hashes[0] == hashes[1] != hashes[2]


_ROW = pa.schema([("value", pa.string()), ("source", pa.string())])
_MET = pa.schema([("partition", pa.int64()), ("value", pa.string()), ("sources", pa.int64())])


@pytest.mark.spark
def test_a_values_rows_from_different_tasks_meet_in_one_partition(spark, tmp_path) -> None:
    # Different tasks hold texts of different lengths: the hash must not care.
    files = {"short": [f"m{n}" for n in range(300)],
             "long": [f"m{n}" for n in range(300)] + ["x" * 200]}
    for source, values in files.items():
        pq.write_table(pa.table({"value": values, "source": [source] * len(values)}),
                       tmp_path / f"{source}.parquet")
    tasks = [Scan("run", "rows", str(tmp_path / f"{source}.parquet"), (0,)) for source in files]

    def met(table: pa.Table) -> pa.Table:
        from pyspark import TaskContext

        sources = table.group_by("value").aggregate([("source", "count_distinct")])
        here = TaskContext.get().partitionId()
        return pa.table({"partition": pa.repeat(here, sources.num_rows), "value": sources["value"],
                         "sources": sources["source_count_distinct"]}, schema=_MET)

    gathered = gather([scatter_scans(spark, tasks, lambda task: task.read(_ROW.names).select(
        _ROW.names), "value", 7)], 7)
    rows = decide(gathered, met, _MET).collect()
    assert len(rows) == 301
    assert all(row["sources"] == 2 for row in rows if row["value"] != "x" * 200)
    assert len({row["partition"] for row in rows}) > 1


_PLACED = pa.schema([("run", pa.string()), ("topic", pa.string()), ("value", pa.string())])


@pytest.mark.spark
def test_texts_read_as_dictionaries_keep_their_meaning_through_the_shuffle(
        spark, tmp_path) -> None:
    # Every row group of the file, and every run, brings its own dictionary: a partition
    # holds rows of several, and its codes must still stand for the texts the rows had.
    path = tmp_path / "rows.parquet"
    with pq.ParquetWriter(path, _PLACED.remove(0)) as writer:
        for group in range(3):
            writer.write_table(pa.table({"topic": [f"t{group}-{n % 3}" for n in range(40)],
                                         "value": [f"m{group}-{n}" for n in range(40)]}))
    tasks = [Scan(run, "rows", str(path), (0, 1, 2)) for run in ("a", "b")]
    read = tasks[0].read(_PLACED.names, ["run", "topic"])
    assert [pa.types.is_dictionary(f.type) for f in read.schema] == [True, False, True]

    def placed(table: pa.Table) -> pa.Table:
        codes = TextCodes(table, ["run", "topic"])
        return codes.decode(codes.table.select(_PLACED.names), _PLACED)

    gathered = gather([scatter_scans(spark, tasks, lambda task: task.read(
        _PLACED.names, ["run", "topic"]), "value", 5)], 5)
    rows = sorted(tuple(row) for row in decide(gathered, placed, _PLACED).collect())
    assert rows == sorted((run, f"t{group}-{n % 3}", f"m{group}-{n}")
                          for run in ("a", "b") for group in range(3) for n in range(40))


def test_the_views_read_each_operation_once_with_its_completion(tmp_path: Path) -> None:
    history = History(tmp_path / "history.jsonl")
    history.subscribe("s", "exclusive")
    history.send("m1", position="1:0", segment=3)
    history.send("m2", outcome="fail")
    history.send("m3", outcome="info", key="k2")
    history.recv("m1", position="1:0", segment=3)
    history.recv("m1", cluster="b")
    history.ack("m1")
    history.ack("m1", cumulative=True)
    history.ack("m2", outcome="fail")
    history.writer.record("p9", "invoke", "send", value="m4")  # never completed
    prepared = prepare(history.close())

    def read(view: View, path: Path, names: list[str]) -> list[tuple]:
        table = pq.read_table(path, columns=[c for c in view.reads(names) if c != "run"])
        table = table.append_column("run", pa.repeat(pa.scalar("r"), table.num_rows))
        return [tuple(row.values()) for row in view.table(table, names).to_pylist()]

    assert read(SENDS, prepared.operations, ["value", "outcome", "segment", "position"]) == [
        ("m1", "ok", 3, "1:0"), ("m2", "fail", None, None), ("m3", "info", None, None),
        ("m4", None, None, None)]
    # Only acks completed `ok`; their moment is the completion's.
    assert read(ACKS, prepared.operations, ["value", "cumulative", "ack_index"]) == [
        ("m1", False, 11), ("m1", True, 13)]
    # A delivery that names no segment reads as segment -1.
    assert read(RECVS, prepared.observations, ["value", "cluster", "seg", "position"]) == [
        ("m1", "a", 3, "1:0"), ("m1", "b", -1, None)]


@pytest.mark.parametrize(("file", "column", "schema"), [
    ("operations", "cumulative", OPERATIONS_SCHEMA), ("facts", "segment", FACTS_SCHEMA)])
def test_a_pairing_by_older_code_is_done_again(tmp_path, file, column, schema) -> None:
    history = History(tmp_path / "history.jsonl")
    history.send("m1", segment=0)
    prepared = prepare(history.close())
    path = getattr(prepared, file)
    pq.write_table(pq.read_table(path).drop_columns([column]), path)  # newer, but lacking it
    prepared = prepare(prepared.source)
    assert pq.read_schema(path).equals(schema)
