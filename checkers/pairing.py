"""Folding each completion into its invoke while the history streams through the driver.

A client process has one operation outstanding, so an invoke's completion is the next
non-observation event of the same process. Finding it in Spark means sorting every
process's events; here the history already arrives in index order, so each batch needs
only a stable sort by process and a shift, vectorised in Arrow and numpy. Invokes whose
process has not spoken again by the end of a batch wait for the next one (at most one per
process), so memory stays bounded by the batch.

Four Parquet files come out, the checkers' only input:

- operations: one row per invoke, its own fields plus the completion's as `done_*`
  columns (null when the process's next event was another invoke or never came), and
  `key_hash` of its key (spec, `misrouted`), computed once per distinct key, and
  `cumulative`, whether an ack's detail (else its completion's) says it is cumulative;
- observations: every other event (`recv`, `layout`, `meta`, and any completion that
  followed no invoke), unchanged;
- facts: the few events the driver itself needs (`FACTS_SCHEMA`), gathered on the way so
  that no Spark job has to scan the history for them before the checkers can be planned;
- cumulative acks: every ack completed `ok` that is cumulative (`CUMULATIVE_ACKS_SCHEMA`),
  a small share of the acks, which the driver hands to every task that reads deliveries
  (`checkers.coverage`).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from checkers.views import OBSERVATIONS_FILE, OPERATIONS_FILE, SENDS
from history.schema import ARROW_SCHEMA, OBSERVATIONS, detail_object, key_hash

# The completion's fields carried onto its invoke, by the name they take there.
COMPLETION_FIELDS = {"type": "done_type", "index": "done_index", "time": "done_time",
                     "segment": "done_segment", "position": "done_position",
                     "detail": "done_detail", "error": "done_error", "node": "done_node"}
OPERATIONS_SCHEMA = pa.schema(
    [*ARROW_SCHEMA, *(pa.field(done, ARROW_SCHEMA.field(name).type)
                      for name, done in COMPLETION_FIELDS.items()),
     pa.field("key_hash", pa.int32()), pa.field("cumulative", pa.bool_())])

FACTS_SCHEMA = pa.schema([
    ("f", pa.string()), ("process", pa.string()), ("topic", pa.string()),
    ("subscription", pa.string()), ("cluster", pa.string()), ("position", pa.string()),
    ("detail", pa.string()), ("done_detail", pa.string()),
    ("index", pa.int64()), ("time", pa.int64()), ("outcome", pa.string()),
    ("done_time", pa.int64()), ("done_index", pa.int64()), ("segment", pa.int64()),
    ("consumer", pa.string()), ("epoch", pa.int64()), ("done_epoch", pa.int64())])
"""Layouts, meta, cursor readings and pushed assignments (`outcome` ok; a subscription's
cursor is read about once a second and an assignment changes with the layout, so they
stay few); completed drains, subscribes (`subscription` falls back to the value) and
failovers; every registration and unregistration (`done_epoch`: the epoch a
registration's answer names, as `epoch` is a push's), and every nemesis operation,
however it ended; one `cumulative-ack` row (index -1) when some completed ack was
cumulative; and per topic and segment, its first acknowledged write (`first-write`: the
send's completion as `index`, `time`, `done_*`), which `dual-write` compares every send
against."""

CUMULATIVE_ACKS_SCHEMA = pa.schema([
    ("topic", pa.string()), ("subscription", pa.string()), ("cluster", pa.string()),
    ("value", pa.string()), ("ack_index", pa.int64()), ("ack_time", pa.int64())])
"""A cumulative ack completed `ok`: its scope, value, and completion's index and time."""

FACTS_FILE = "facts.parquet"
CUMULATIVE_ACKS_FILE = "cumulative-acks.parquet"
PAIRED_FILES = (OPERATIONS_FILE, OBSERVATIONS_FILE, FACTS_FILE, CUMULATIVE_ACKS_FILE)
_ROW_GROUP = 1 << 18
_DISTINCT_TEXT = frozenset({"value", "position", "done_position", "detail", "done_detail"})
_OBSERVATIONS = pa.array(sorted(OBSERVATIONS))
_FACT_OBSERVATIONS = pa.array(["layout", "meta", "cursor", "assign", "health"])
_FACT_OPERATIONS = pa.array(["drain", "subscribe", "failover"])
_SESSION_OPERATIONS = pa.array(["register", "unregister"])
_WRITES = ["topic", "segment", "outcome", "done_time", "done_index"]
_FIRST = ["topic", "segment"]


def _cumulative(operations: pa.Table) -> pa.Array:
    """Per operation: an ack whose detail (else its completion's) says `cumulative`: true,
    as JSON or as text. Only details that mention the word are parsed."""
    mentioned = pc.and_(pc.equal(operations["f"], "ack"), pc.fill_null(pc.or_kleene(
        pc.match_substring(operations["detail"], "cumulative"),
        pc.match_substring(operations["done_detail"], "cumulative")), False))
    flags = np.zeros(operations.num_rows, dtype=bool)
    rows = np.flatnonzero(mentioned.to_numpy(zero_copy_only=False))
    details = operations.select(["detail", "done_detail"]).take(rows).to_pydict().values()
    for row, detail, done_detail in zip(rows, *details):
        flag = detail_object(detail).get("cumulative")
        if flag is None:
            flag = detail_object(done_detail).get("cumulative")
        flags[row] = flag is True or flag == "true"
    return pa.array(flags)


def _earliest(writes: pa.Table) -> pa.Table:
    """Per topic and segment, the first of these acknowledged writes (`done_time`,
    `done_index`): times never decrease in index order, so the two minimums are one
    event's."""
    firsts = writes.group_by(_FIRST).aggregate([("done_time", "min"), ("done_index", "min")])
    return firsts.rename_columns([*_FIRST, "done_time", "done_index"])


class OperationPairer:
    """Feed event batches in index order; completed operations and observations go to
    their writers as they are resolved, and the facts to a file of their own at close."""

    def __init__(self, directory: Path) -> None:
        self._operations = _BufferedWriter(directory / OPERATIONS_FILE, OPERATIONS_SCHEMA)
        self._observations = _BufferedWriter(directory / OBSERVATIONS_FILE, ARROW_SCHEMA)
        self._facts_path = directory / FACTS_FILE
        self._facts: list[pa.Table] = []
        self._cumulative_acks_path = directory / CUMULATIVE_ACKS_FILE
        self._cumulative_acks: list[pa.Table] = []
        self._first_writes: list[pa.Table] = []
        self._waiting = ARROW_SCHEMA.empty_table()
        self._hashes: dict[str, int] = {}

    def feed(self, batch: pa.RecordBatch) -> None:
        events = pa.concat_tables([self._waiting, pa.Table.from_batches([batch])])
        observation = pc.and_(pc.is_in(events["f"], _OBSERVATIONS),
                              pc.equal(events["type"], "ok"))
        observed = events.filter(observation)
        self._observations.write(observed)
        facts = observed.filter(pc.is_in(observed["f"], _FACT_OBSERVATIONS))
        self._keep_facts(facts, facts["type"], facts["subscription"])
        # Every other event is a step of an operation: found by position in `events`, so
        # only what is written gets copied.
        step = np.flatnonzero(~observation.to_numpy(zero_copy_only=False))
        process = pc.dictionary_encode(
            events["process"].take(step).combine_chunks()).indices.to_numpy()
        order = np.argsort(process, kind="stable")  # each process's steps in index order
        same = process[order[1:]] == process[order[:-1]]
        follower = np.full(len(order), -1, dtype=np.int64)
        follower[order[:-1][same]] = order[1:][same]
        is_invoke = pc.equal(events["type"].take(step), "invoke").to_numpy(zero_copy_only=False)
        folded = np.zeros(len(order), dtype=bool)
        folded[order[1:][same]] = is_invoke[order[:-1][same]]
        has_follower = follower >= 0
        done = has_follower & is_invoke
        done[done] = ~is_invoke[follower[done]]
        resolved = is_invoke & has_follower
        self._write_operations(events, step[resolved], np.where(done, step[follower], -1)[resolved])
        self._observations.write(events.take(step[~is_invoke & ~folded]))
        self._waiting = events.take(step[is_invoke & ~has_follower])

    def close(self) -> None:
        """Invokes still waiting never completed: they are written with no completion."""
        waiting = np.arange(self._waiting.num_rows)
        self._write_operations(self._waiting, waiting, np.full(len(waiting), -1))
        self._operations.close()
        self._observations.close()
        if self._first_writes:
            firsts = _earliest(pa.concat_tables(self._first_writes))
            count = firsts.num_rows
            self._keep_facts(pa.table({
                "f": pa.repeat(pa.scalar("first-write"), count), "topic": firsts["topic"],
                "segment": firsts["segment"], "index": firsts["done_index"],
                "time": firsts["done_time"], "done_index": firsts["done_index"],
                "done_time": firsts["done_time"]}),
                pa.repeat(pa.scalar("ok"), count), pa.nulls(count, pa.string()))
        pq.write_table(pa.concat_tables([FACTS_SCHEMA.empty_table(), *self._facts]),
                       self._facts_path)
        pq.write_table(pa.concat_tables([CUMULATIVE_ACKS_SCHEMA.empty_table(),
                                         *self._cumulative_acks]), self._cumulative_acks_path)

    def _write_operations(self, events: pa.Table, invokes: np.ndarray,
                          completions: np.ndarray) -> None:
        rows = events.take(invokes)
        missing = completions < 0
        taken = pa.array(np.where(missing, 0, completions), mask=missing)
        columns = dict(zip(rows.column_names, rows.columns))
        for name, done in COMPLETION_FIELDS.items():
            columns[done] = events[name].take(taken)
        columns["key_hash"] = self._key_hashes(rows["key"])
        columns["cumulative"] = _cumulative(pa.table(columns))
        operations = pa.table(columns, schema=OPERATIONS_SCHEMA)
        self._operations.write(operations)
        completed = pc.equal(operations["done_type"], "ok")
        # Kleene logic, as in SQL: a nemesis operation or a session's step that never
        # completed is kept.
        wanted = pc.or_kleene(pc.or_kleene(
            pc.and_kleene(pc.is_in(operations["f"], _FACT_OPERATIONS), completed),
            pc.equal(operations["process"], "nemesis")),
            pc.is_in(operations["f"], _SESSION_OPERATIONS))
        # Only the facts carry the completion's epoch (a registration's answer names one):
        # no checker of the operations file reads it.
        facts = operations.filter(wanted).append_column(
            "done_epoch", events["epoch"].take(pc.filter(taken, wanted)))
        sends = SENDS.table(operations, _WRITES)
        self._first_writes.append(_earliest(sends.filter(pc.and_(
            pc.equal(sends["outcome"], "ok"), pc.is_valid(sends["segment"])))))
        self._keep_facts(facts, facts["done_type"],
                         pc.coalesce(facts["subscription"], facts["value"]))
        cumulative = operations.filter(pc.and_(
            operations["cumulative"], pc.fill_null(completed, False)))
        if cumulative.num_rows:
            if not self._cumulative_acks:  # the run's first
                self._facts.append(pa.Table.from_pylist(
                    [{"f": "cumulative-ack", "index": -1}], schema=FACTS_SCHEMA))
            self._cumulative_acks.append(pa.table(
                [cumulative[name] for name in ["topic", "subscription", "cluster", "value",
                                               "done_index", "done_time"]],
                schema=CUMULATIVE_ACKS_SCHEMA))

    def _keep_facts(self, events: pa.Table, outcome: pa.ChunkedArray,
                    subscription: pa.ChunkedArray) -> None:
        if not events.num_rows:
            return
        columns = {name: events[name] if name in events.column_names
                   else pa.nulls(events.num_rows, FACTS_SCHEMA.field(name).type)
                   for name in FACTS_SCHEMA.names}
        columns.update(outcome=outcome, subscription=subscription)
        self._facts.append(pa.table(columns, schema=FACTS_SCHEMA))

    def _key_hashes(self, keys: pa.ChunkedArray) -> pa.Array:
        encoded = pc.dictionary_encode(keys.combine_chunks())
        hashes = [self._hashes.get(k) for k in encoded.dictionary.to_pylist()]
        for n, k in enumerate(encoded.dictionary.to_pylist()):
            if hashes[n] is None:
                hashes[n] = self._hashes[k] = key_hash(k)
        return pc.take(pa.array(hashes, pa.int32()), encoded.indices)


class _BufferedWriter:
    """A Parquet writer that gathers small batches into row groups of 256K rows (so Spark
    can split a file across cores) and writes each in a background thread while the next
    batch is paired: Arrow's writer releases the GIL, so the pass uses two cores. At most
    one row group waits, which bounds memory.

    Uncompressed, with dictionaries only for the columns that repeat: encoding a million
    distinct message ids costs more than reading the larger file saves."""

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        repeating = [f.name for f in schema if pa.types.is_string(f.type)
                     and f.name not in _DISTINCT_TEXT]
        self._writer = pq.ParquetWriter(path, schema, compression="none",
                                        use_dictionary=repeating, write_statistics=False)
        self._pending: list[pa.Table] = []
        self._rows = 0
        self._thread = ThreadPoolExecutor(max_workers=1)
        self._writing: Future[None] | None = None

    def write(self, table: pa.Table) -> None:
        if table.num_rows:
            self._pending.append(table)
            self._rows += table.num_rows
        if self._rows >= _ROW_GROUP:
            self._flush()

    def _flush(self) -> None:
        if self._writing is not None:
            self._writing.result()
            self._writing = None
        if self._pending:
            self._writing = self._thread.submit(self._writer.write_table,
                                                pa.concat_tables(self._pending),
                                                row_group_size=_ROW_GROUP)
        self._pending, self._rows = [], 0

    def close(self) -> None:
        self._flush()
        if self._writing is not None:
            self._writing.result()
        self._thread.shutdown()
        self._writer.close()
