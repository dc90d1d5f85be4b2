"""The views of a history that the checkers share, built once per check.

Every frame carries a `run` column, so checking a hundred runs is one Spark job over their
union rather than a hundred jobs. Nothing here collects the history: only layouts, nemesis
operations and failovers, which are small by construction, ever reach the driver.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from checkers.schema import FIELDS, OBSERVATIONS


def position_struct(column: str = "position") -> Column:
    """`ledgerId:entryId[:batchIndex]` as a struct that orders the way positions do."""
    parts = F.split(F.col(column), ":")
    return F.when(F.col(column).isNull(), F.lit(None)).otherwise(F.struct(
        F.get(parts, 0).try_cast("long").alias("ledger"),
        F.get(parts, 1).try_cast("long").alias("entry"),
        F.coalesce(F.get(parts, 2).try_cast("long"), F.lit(-1)).alias("batch"),
    ))


def json_field(column: str, key: str) -> Column:
    return F.get_json_object(F.col(column), f"$.{key}")


@dataclass(frozen=True)
class Segment:
    segment_id: int
    start: int
    end: int
    parents: tuple[int, ...]


@dataclass
class HistoryFrames:
    """Shared views; build with `HistoryFrames.load`."""

    spark: SparkSession
    events: DataFrame
    ops: DataFrame
    recvs: DataFrame
    runs: list[str]
    layouts: dict[tuple[str, str], dict[int, Segment]] = field(default_factory=dict)
    meta: dict[str, dict] = field(default_factory=dict)
    drained: set[str] = field(default_factory=set)

    @classmethod
    def load(cls, spark: SparkSession, parquet_by_run: dict[str, str]) -> HistoryFrames:
        columns = list(FIELDS)
        parts = [spark.read.parquet(path).select(*columns).withColumn("run", F.lit(run))
                 for run, path in parquet_by_run.items()]
        events = parts[0]
        for part in parts[1:]:
            events = events.unionByName(part)
        ops = _pair_operations(events).persist(StorageLevel.MEMORY_AND_DISK)
        recvs = (events.filter((F.col("f") == "recv") & (F.col("type") == "ok"))
                 .select("run", "index", "time", "topic", "subscription", "consumer",
                         "cluster", "value", F.coalesce("segment", F.lit(-1)).alias("seg"),
                         position_struct().alias("pos"), "position")
                 .persist(StorageLevel.MEMORY_AND_DISK))
        frames = cls(spark, events, ops, recvs, list(parquet_by_run))
        frames._collect_small_facts()
        return frames

    def _collect_small_facts(self) -> None:
        small = (self.events.filter(F.col("f").isin("layout", "meta") & (F.col("type") == "ok"))
                 .select("run", "f", "topic", "detail").collect())
        for row in small:
            detail = _parse_json(row["detail"])
            if row["f"] == "meta":
                self.meta.setdefault(row["run"], detail)
            else:
                segments = self.layouts.setdefault((row["run"], row["topic"] or ""), {})
                segments.update(_segments(detail))
        drains = (self.ops.filter((F.col("f") == "drain") & (F.col("outcome") == "ok"))
                  .select("run").distinct().collect())
        self.drained = {row["run"] for row in drains}

    # --- views over operations ------------------------------------------------------------

    def sends(self) -> DataFrame:
        return self.ops.filter(F.col("f") == "send").select(
            "run", "process", "topic", "cluster", "key", "value", "outcome",
            "inv_index", "inv_time", "done_index", "done_time",
            F.coalesce("done_segment", "segment").alias("segment"),
            F.coalesce("done_position", "position").alias("position"))

    def acks_ok(self) -> DataFrame:
        cumulative = F.coalesce(json_field("detail", "cumulative"),
                                json_field("done_detail", "cumulative")) == "true"
        return (self.ops.filter((F.col("f") == "ack") & (F.col("outcome") == "ok"))
                .select("run", "topic", "subscription", "cluster", "value",
                        F.coalesce(cumulative, F.lit(False)).alias("cumulative"),
                        F.col("done_index").alias("ack_index"),
                        F.col("done_time").alias("ack_time")))

    def subscriptions(self) -> DataFrame:
        """(run, topic, subscription) -> when it began to exist and its mode."""
        mode = F.coalesce(json_field("done_detail", "mode"), json_field("detail", "mode"))
        return (self.ops.filter((F.col("f") == "subscribe") & (F.col("outcome") == "ok"))
                .select("run", "topic", F.coalesce("subscription", "value").alias("subscription"),
                        F.struct("done_index", mode.alias("mode")).alias("first"))
                .groupBy("run", "topic", "subscription").agg(F.min("first").alias("first"))
                .select("run", "topic", "subscription",
                        F.col("first.done_index").alias("since_index"),
                        F.col("first.mode").alias("mode")))

    def failovers(self) -> DataFrame:
        return (self.ops.filter((F.col("f") == "failover") & (F.col("outcome") == "ok"))
                .select("run", "topic", F.coalesce("subscription", "value").alias("subscription"),
                        F.coalesce(json_field("done_detail", "from"),
                                   json_field("detail", "from")).alias("from_cluster"),
                        F.coalesce(json_field("done_detail", "to"),
                                   json_field("detail", "to")).alias("to_cluster"),
                        F.col("inv_index").alias("failover_index"),
                        F.col("inv_time").alias("failover_time")))

    def acked(self) -> DataFrame:
        """The earliest moment each delivered value counted as acknowledged in a
        subscription and cluster: by its own ack, or by a cumulative ack at or past its
        position in the same segment (or topic)."""
        if getattr(self, "_acked", None) is None:
            self._acked = _acked(self.acks_ok(), self.recvs).persist(
                StorageLevel.MEMORY_AND_DISK)
        return self._acked


def _pair_operations(events: DataFrame) -> DataFrame:
    """One row per invoke with its completion: a process has at most one operation
    outstanding, so the completion is the process's next non-observation event."""
    operation_events = events.filter(~(F.col("f").isin(*OBSERVATIONS) & (F.col("type") == "ok")))
    by_process = Window.partitionBy("run", "process").orderBy("index")
    done = F.lead(F.struct("type", "index", "time", "segment", "position", "epoch", "detail",
                           "node", "error")).over(by_process)
    paired = operation_events.withColumn("done", done).filter(F.col("type") == "invoke")
    completed = F.col("done.type") != "invoke"
    return paired.select(
        "run", "process", "f", "topic", "cluster", "subscription", "consumer", "key", "value",
        "segment", "position", "detail",
        F.col("index").alias("inv_index"), F.col("time").alias("inv_time"),
        F.when(completed, F.col("done.type")).alias("outcome"),
        F.when(completed, F.col("done.index")).alias("done_index"),
        F.when(completed, F.col("done.time")).alias("done_time"),
        F.when(completed, F.col("done.segment")).alias("done_segment"),
        F.when(completed, F.col("done.position")).alias("done_position"),
        F.when(completed, F.col("done.detail")).alias("done_detail"),
        F.when(completed, F.col("done.error")).alias("error"),
        F.when(completed, F.col("done.node")).alias("node"),
    )


def _acked(acks: DataFrame, recvs: DataFrame) -> DataFrame:
    scope = ["run", "topic", "subscription", "cluster"]
    first_ack = F.struct(F.col("ack_index"), F.col("ack_time"))
    individual = (acks.filter(~F.col("cumulative"))
                  .groupBy(*scope, "value").agg(F.min(first_ack).alias("ack")))

    delivered = recvs.filter(F.col("pos").isNotNull()).select(*scope, "value", "seg", "pos").distinct()
    # A cumulative ack names a message; its position in this cluster is where it was delivered.
    cumulative = (acks.filter(F.col("cumulative"))
                  .join(delivered, [*scope, "value"])
                  .select(*scope, "seg", "pos", "ack_index", "ack_time"))
    in_ack_order = Window.partitionBy(*scope, "seg").orderBy("ack_index").rowsBetween(
        Window.unboundedPreceding, Window.currentRow)
    marks = cumulative.select(*scope, "seg", F.max("pos").over(in_ack_order).alias("at"),
                              first_ack.alias("ack"), F.lit(None).cast("string").alias("value"),
                              F.lit(0).alias("kind"))
    # Only scopes that saw a cumulative ack need the walk below; most histories ack
    # individually, and then this leaves nothing to sort.
    in_cumulative_scopes = delivered.join(cumulative.select(*scope, "seg").distinct(),
                                          [*scope, "seg"], "left_semi")
    wanted = in_cumulative_scopes.select(*scope, "seg", F.col("pos").alias("at"),
                              F.lit(None).cast(marks.schema["ack"].dataType).alias("ack"),
                              "value", F.lit(1).alias("kind"))
    # Walking positions downwards, the earliest mark at or above a position is the moment
    # the cumulative acknowledgement first covered it (marks only grow with time).
    downwards = Window.partitionBy(*scope, "seg").orderBy(F.col("at").desc(), "kind").rowsBetween(
        Window.unboundedPreceding, Window.currentRow)
    covered = (marks.unionByName(wanted)
               .withColumn("covering", F.min("ack").over(downwards))
               .filter((F.col("kind") == 1) & F.col("covering").isNotNull())
               .select(*scope, "value", F.col("covering").alias("ack")))
    return (individual.unionByName(covered)
            .groupBy(*scope, "value").agg(F.min("ack").alias("ack"))
            .select(*scope, "value", F.col("ack.ack_index").alias("ack_index"),
                    F.col("ack.ack_time").alias("ack_time")))


def _parse_json(text: str | None) -> dict:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _segments(metadata: dict) -> dict[int, Segment]:
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
