"""The views of a history that the checkers share, built once per check.

Every frame carries a `run` column, so checking a hundred runs is one Spark job over their
union rather than a hundred jobs. Nothing here collects the history: only layouts,
subscriptions, nemesis operations and failovers, which are small by construction, ever
reach the driver.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from checkers.load import PreparedHistory
from checkers.pairing import OPERATIONS_SCHEMA
from checkers.partitions import Scan, scans
from checkers.views import OBSERVATIONS_FILE, OPERATIONS_FILE
from history.cursor import CursorReading
from history.faults import closed_by_target, heal_of
from history.schema import detail_object

ACK_SCOPE = ["run", "topic", "subscription", "cluster"]
"""Where an acknowledgement counts: one subscription of one topic, in one cluster."""
CursorScope = tuple[str, str | None, str | None, str | None]
"""`ACK_SCOPE`'s values: where a cursor reading holds."""

SESSION_EVENTS = frozenset({"register", "assign", "unregister"})
"""What a scalable consumer's session with its controller leaves in the history."""

ROWS_PER_PARTITION = 1000000
"""About how many events one partition of a by-key shuffle holds: a Python worker takes a
whole partition as one Arrow table, so this bounds its memory."""


@dataclass(frozen=True)
class Segment:
    segment_id: int
    start: int
    end: int
    parents: tuple[int, ...]


@dataclass(frozen=True)
class SmallFact:
    """One event the driver keeps: layouts, meta, drains, nemesis operations, failovers."""

    run: str
    f: str
    process: str | None
    topic: str | None
    subscription: str | None
    cluster: str | None
    position: str | None
    detail: str | None
    """The event's (or the invoke's) `detail` text, as recorded."""
    done_detail: str | None
    index: int
    time: int
    outcome: str | None
    done_time: int | None
    done_index: int | None
    segment: int | None
    consumer: str | None
    epoch: int | None = None
    """The layout epoch the event (an operation's invoke) names, when it names one."""
    done_epoch: int | None = None
    """The epoch its completion names (a registration's answer)."""


def closing_op(nemesis: list[SmallFact], n: int,
               closers: Collection[str | None]) -> SmallFact | None:
    """The first nemesis operation after `nemesis[n]` in the same run whose `f` is one of
    `closers` and that ends it (`_ends`): what ended that fault; None when nothing did
    before the history ends."""
    opened = nemesis[n]
    return next((later for later in nemesis[n + 1:]
                 if later.run == opened.run and later.f in closers and _ends(later, opened)),
                None)


def _ends(closer: SmallFact, opened: SmallFact) -> bool:
    """Whether `closer` ends the fault `opened`. Two faults of one kind may be on at once
    (two brokers frozen, two clusters' replication unlinked), and where the kind is closed
    by target (`history.faults`) the end of one is not the end of the other: then it does
    when either names no targets (a heal of everything, or a history that does not say),
    when both name the same targets in the same order (a cluster pair's order says which
    way replication stopped), or when the closer names more, among them all of the
    fault's (every killed broker started at once). A network heal ends everything. A
    relink ends an unlink by the link the two name in their completions, where both do
    (`_link`): an unlink without targets stopped the other clusters replicating to the
    first, and a relink of another pair is not its end."""
    if not closed_by_target(opened.f) or closer.f == "heal":
        return True
    relinked, unlinked = _link(closer), _link(opened)
    if relinked is not None and unlinked is not None:
        return relinked[0] == unlinked[0] and unlinked[1] <= relinked[1]
    ended, began = _targets(closer), _targets(opened)
    return (not ended or not began or ended == began
            or (len(ended) > len(began) and set(began) <= set(ended)))


def _link(op: SmallFact) -> tuple[str, frozenset[str]] | None:
    """The replication an `unlink-replication` or `relink-replication` changed, as its
    completion names it: the receiving cluster and the clusters whose lists were
    rewritten; None for any other operation, or one whose completion does not say."""
    detail = detail_object(op.done_detail)
    receiver, lists = detail.get("receiver"), detail.get("replication_clusters")
    if not isinstance(receiver, str) or not isinstance(lists, dict) or not lists:
        return None
    return receiver, frozenset(lists)


def _targets(op: SmallFact) -> list[str]:
    """The targets a nemesis operation names (docs/history.md, "nemesis ops"): its
    invoke's, else its completion's."""
    for detail in (op.detail, op.done_detail):
        targets = detail_object(detail).get("targets")
        if isinstance(targets, list) and targets:
            return [str(t) for t in targets]
    return []


def ending_op(nemesis: list[SmallFact], n: int) -> SmallFact | None:
    """What ended the fault `nemesis[n]` opened: itself for an instantaneous one, else its
    own closing operation or a general `heal`; None when nothing did before the history
    ends."""
    heal = heal_of(nemesis[n].f)
    return nemesis[n] if heal is None else closing_op(nemesis, n, {heal, "heal"})


@dataclass(frozen=True)
class FirstWrite:
    """A segment's first acknowledged send: its completion's time and index."""

    time: int
    index: int


@dataclass(frozen=True)
class Subscription:
    """A subscription as first created: what it is owed starts after `since_index`."""

    run: str
    topic: str | None
    subscription: str | None
    since_index: int
    mode: str | None


@dataclass
class HistoryFrames:
    """Shared views; build with `HistoryFrames.load`. The Spark frames are read only when a
    finder asks for one: most passes read the paired files in Python workers (`scans`),
    and sparing Spark the reads spares the driver's cold JVM a second or two of planning."""

    spark: SparkSession
    runs: list[str]
    partitions: int
    """How many partitions each by-key shuffle makes (see `ROWS_PER_PARTITION`)."""
    paired: dict[str, Path]
    """Each run's paired directory, which the Python workers read (`scans`)."""
    layouts: dict[tuple[str, str], dict[int, Segment]] = field(default_factory=dict)
    meta: dict[str, dict[str, Any]] = field(default_factory=dict)
    drained: set[str] = field(default_factory=set)
    drain_ok_index: dict[str, int] = field(default_factory=dict)
    """Each drained run's first completed drain: its `ok`'s index."""
    cursor_readings: list[SmallFact] = field(default_factory=list)
    """Every `cursor` observation, by run and index (a few per second of a run)."""
    health_readings: list[SmallFact] = field(default_factory=list)
    """Every `health` observation, by run and index (one per broker and second)."""
    nemesis: list[SmallFact] = field(default_factory=list)
    """Nemesis operations, by run and index."""
    failover_ops: list[SmallFact] = field(default_factory=list)
    cumulative_ack_runs: set[str] = field(default_factory=set)
    """Runs with at least one cumulative ack: only they need the coverage walk."""
    subscriptions: list[Subscription] = field(default_factory=list)
    subscribed_in: set[tuple[str, str | None, str | None, str | None]] = field(
        default_factory=set)
    """(run, topic, subscription, cluster) of every completed subscribe: where each
    subscription was consumed."""
    sessions: list[SmallFact] = field(default_factory=list)
    """Scalable consumers' `register`s and `unregister`s, however they ended, and their
    `assign` observations, by run and index (`checkers.sessions`)."""
    first_writes: dict[tuple[str, str | None, int], FirstWrite] = field(default_factory=dict)
    """By run, topic and segment (see `checkers.pairing`)."""

    @classmethod
    def load(cls, spark: SparkSession, histories: dict[str, PreparedHistory]) -> HistoryFrames:
        events = sum(h.events for h in histories.values())
        shuffle_partitions = spark.conf.get("spark.sql.shuffle.partitions")
        assert shuffle_partitions is not None  # Spark's SQL configuration has a default
        partitions = max(int(shuffle_partitions),
                         math.ceil(events / ROWS_PER_PARTITION))
        frames = cls(spark, list(histories), partitions,
                     {run: h.paired for run, h in histories.items()})
        frames._collect_small_facts(histories)
        return frames

    @cached_property
    def ops(self) -> DataFrame:
        """One row per invoke with its completion (`outcome`, `done_*`), see
        `checkers.pairing`."""
        return self._operations.select(
            "run", "process", "f", "topic", "cluster", "subscription", "consumer", "key",
            "value", "segment", "position", "detail", "key_hash",
            F.col("index").alias("inv_index"), F.col("time").alias("inv_time"),
            F.col("done_type").alias("outcome"), "done_index", "done_time", "done_segment",
            "done_position", "done_detail", F.col("done_error").alias("error"),
            F.col("done_node").alias("node"))

    @cached_property
    def _operations(self) -> DataFrame:
        return self._read(OPERATIONS_FILE, OPERATIONS_SCHEMA)

    def _read(self, file: str, schema: pa.Schema) -> DataFrame:
        return _read_runs(self.spark, schema, {str((directory / file).resolve()): run
                                               for run, directory in self.paired.items()})

    def _collect_small_facts(self, histories: dict[str, PreparedHistory]) -> None:
        """The few events the driver needs, gathered while the history was paired."""
        facts = [SmallFact(run=run, **row) for run, history in histories.items()
                 for row in pq.read_table(history.facts).to_pylist()]
        first: dict[tuple[str, str | None, str | None], SmallFact] = {}
        for fact in sorted(facts, key=lambda f: (f.run, f.index)):
            if fact.f == "meta":
                self.meta.setdefault(fact.run, detail_object(fact.detail))
            elif fact.f == "layout":
                segments = self.layouts.setdefault((fact.run, fact.topic or ""), {})
                segments.update(_segments(detail_object(fact.detail)))
            elif fact.f == "drain":
                self.drained.add(fact.run)
                self.drain_ok_index.setdefault(fact.run, _done_index(fact))
            elif fact.f == "cursor":
                self.cursor_readings.append(fact)
            elif fact.f == "health":
                self.health_readings.append(fact)
            elif fact.f == "subscribe":
                self.subscribed_in.add((fact.run, fact.topic, fact.subscription, fact.cluster))
                created = first.setdefault((fact.run, fact.topic, fact.subscription), fact)
                if _done_index(fact) < _done_index(created):
                    first[(fact.run, fact.topic, fact.subscription)] = fact
            elif fact.f in SESSION_EVENTS:
                self.sessions.append(fact)
            elif fact.f == "cumulative-ack":
                self.cumulative_ack_runs.add(fact.run)
            elif fact.f == "first-write":
                # Written from acknowledged sends to a segment (`checkers.pairing`).
                assert fact.segment is not None and fact.done_time is not None
                self.first_writes[(fact.run, fact.topic, fact.segment)] = FirstWrite(
                    fact.done_time, _done_index(fact))
            if fact.process == "nemesis":
                self.nemesis.append(fact)
            if fact.f == "failover" and fact.outcome == "ok":
                self.failover_ops.append(fact)
        # A subscription is created by its first subscribe; later ones only reattach.
        self.subscriptions = [Subscription(f.run, f.topic, f.subscription, _done_index(f),
                                           detail_field(f, "mode"))
                              for f in first.values()]

    @property
    def deduplicating_runs(self) -> set[str]:
        """Runs whose `meta` says the broker deduplicates sends (`deduplication`: true)."""
        return {run for run, meta in self.meta.items() if meta.get("deduplication") is True}

    def final_cursors(self) -> dict[CursorScope, tuple[int, CursorReading]]:
        """Per subscription and cluster, its last `cursor` reading after the run's
        completed drain, with that reading's index."""
        final: dict[CursorScope, tuple[int, CursorReading]] = {}
        for fact in self.cursor_readings:
            drained = self.drain_ok_index.get(fact.run)
            if drained is not None and fact.index > drained:
                final[(fact.run, fact.topic, fact.subscription, fact.cluster)] = (
                    fact.index, CursorReading.observed(fact.position, detail_object(fact.detail)))
        return final

    def scans(self) -> list[Scan]:
        """Map tasks over every run's operations and observations, for the Python workers'
        passes; each task's `file` says which views it can read."""
        return [*scans(self.paired, OPERATIONS_FILE), *scans(self.paired, OBSERVATIONS_FILE)]

    # --- views over operations ------------------------------------------------------------

    def subscription_table(self, modes: tuple[str, ...] | None = None) -> pa.Table:
        """`(run, topic, subscription, since_index)` of every subscription (of `modes`,
        when given), for the Python workers' joins."""
        chosen = [s for s in self.subscriptions if modes is None or s.mode in modes]
        return pa.table({"run": [s.run for s in chosen], "topic": [s.topic for s in chosen],
                         "subscription": [s.subscription for s in chosen],
                         "since_index": [s.since_index for s in chosen]},
                        schema=_SUBSCRIPTIONS)

    def meta_number(self, run: str, key: str) -> float | None:
        """The number `run`'s `meta` event carries under `key` (a checker's bound); None
        when it carries none, or something that is not a number."""
        value = self.meta.get(run, {}).get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return float(value)

    def judged_bounds(self, key: str, given: int | None = None) -> dict[str, float]:
        """The bound, in ms, of each run an optional checker judges: `given` (the command
        line's) for every run, else the number each run's `meta` carries under `key`;
        runs with neither are left out."""
        if given is not None:
            return dict.fromkeys(self.runs, float(given))
        bounds = {run: self.meta_number(run, key) for run in self.runs}
        return {run: bound for run, bound in bounds.items() if bound is not None}

    def failover_table(self, ops: list[SmallFact] | None = None) -> pa.Table:
        """Completed failovers (`ops`, by default all), each with its clusters and its
        invoke's index and time: a small table the driver already holds, for the Python
        workers' joins."""
        chosen = self.failover_ops if ops is None else ops
        return pa.table({"run": [f.run for f in chosen], "topic": [f.topic for f in chosen],
                         "subscription": [f.subscription for f in chosen],
                         "from_cluster": [detail_field(f, "from") for f in chosen],
                         "to_cluster": [detail_field(f, "to") for f in chosen],
                         "failover_index": [f.index for f in chosen],
                         "failover_time": [f.time for f in chosen]}, schema=_FAILOVERS)

    def failovers(self, ops: list[SmallFact] | None = None) -> DataFrame:
        """`failover_table(ops)` as a Spark frame, for joins in Spark."""
        return self.spark.createDataFrame(self.failover_table(ops))


def _read_runs(spark: SparkSession, schema: pa.Schema, run_by_path: dict[str, str]) -> DataFrame:
    """The files as one frame with a `run` column: one scan, whatever the number of runs
    (a union of one scan per run makes plans, and checks of many runs, slow). The pairing
    pass wrote `schema`, so Spark need not read the files' footers to learn it."""
    frame = spark.read.schema(from_arrow_schema(schema)).parquet(*run_by_path)
    if len(run_by_path) == 1:
        return frame.withColumn("run", F.lit(next(iter(run_by_path.values()))))
    local_path = F.url_decode(F.regexp_replace(F.col("_metadata.file_path"), "^file:(//)?", ""))
    runs = F.create_map(*[F.lit(text) for item in run_by_path.items() for text in item])
    return frame.withColumn("run", runs[local_path])


_SUBSCRIPTIONS = pa.schema([("run", pa.string()), ("topic", pa.string()),
                            ("subscription", pa.string()), ("since_index", pa.int64())])
_FAILOVERS = pa.schema([("run", pa.string()), ("topic", pa.string()),
                        ("subscription", pa.string()), ("from_cluster", pa.string()),
                        ("to_cluster", pa.string()), ("failover_index", pa.int64()),
                        ("failover_time", pa.int64())])


def _done_index(fact: SmallFact) -> int:
    """The completion's index of a fact kept only once completed (subscribes, first
    writes: see `FACTS_SCHEMA`)."""
    assert fact.done_index is not None, fact
    return fact.done_index


def detail_field(fact: SmallFact, key: str) -> str | None:
    """`key` of the completion's detail, else of the invoke's, as text (the way
    `get_json_object` gives it)."""
    for text in (fact.done_detail, fact.detail):
        value = detail_object(text).get(key)
        if value is not None:
            return value if isinstance(value, str) else json.dumps(value)
    return None


def _segments(metadata: dict[str, Any]) -> dict[int, Segment]:
    """Segments of a PIP-468 `ScalableTopicMetadata` document, by id."""
    segments = {}
    for item in (metadata.get("segments") or {}).values():
        try:
            hash_range = item["hashRange"]
            segments[int(item["segmentId"])] = Segment(
                int(item["segmentId"]), int(hash_range["start"]), int(hash_range["end"]),
                tuple(int(p) for p in item.get("parentIds") or ()))
        except (KeyError, TypeError, ValueError):
            continue
    return segments
