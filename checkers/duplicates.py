"""Redelivery after acknowledgement across a failover between clusters: `duplicate-window`
(PIP-33 bounds it by about one snapshot interval). Within a cluster, `duplicate` is decided
with the other per-value checks (`checkers.delivery`).

PIP-33 takes a snapshot only while every cluster is connected, and promises nothing of a
failover while they are not: the subscription's position in the other cluster stays
where the last completed snapshot put it, however long ago. A failover invoked during a
`cut-wan`, or less than `WAN_RECOVERY_MS` after its heal completed (the replicators
reconnect with backoff, replay what the cut held back, and only then can a snapshot
complete), is therefore not judged: it is *excused*, and counted as such. Its duplicates
still cannot be losses: `lost` judges those runs as any other."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.anomaly import CheckSettings, anomalies, no_anomalies
from checkers.frames import HistoryFrames, SmallFact, closing_op
from history.faults import heal_of
from history.schema import DEFAULT_DUPLICATE_WINDOW_BOUND_MS

WAN_CUT = "cut-wan"
WAN_RECOVERY_MS = 10_000
"""After a WAN cut heals, how long failovers stay excused (module docstring)."""
_MS = 1_000_000


def wan_outages(frames: HistoryFrames) -> dict[str, list[tuple[int, int]]]:
    """Per run: (from, until) in nanoseconds of each WAN cut, from its invoke to
    `WAN_RECOVERY_MS` past the completion of the operation that healed it (its own heal
    or a general `heal`); a cut never healed lasts to the end of the history."""
    outages: dict[str, list[tuple[int, int]]] = {}
    heals = {heal_of(WAN_CUT), "heal"}
    for n, op in enumerate(frames.nemesis):
        if op.f != WAN_CUT:
            continue
        healed = closing_op(frames.nemesis, n, heals)
        until = ((healed.done_time or healed.time) + WAN_RECOVERY_MS * _MS
                 if healed is not None else 2 ** 63 - 1)
        outages.setdefault(op.run, []).append((op.time, until))
    return outages


def judged_failovers(frames: HistoryFrames) -> tuple[list[SmallFact], list[SmallFact]]:
    """(judged, excused): the failovers `duplicate-window` judges, and those invoked while
    the clusters were cut apart or recovering from it (module docstring)."""
    outages = wan_outages(frames)
    judged: list[SmallFact] = []
    excused: list[SmallFact] = []
    for failover in frames.failover_ops:
        cut = any(start <= failover.time <= until
                  for start, until in outages.get(failover.run, []))
        (excused if cut else judged).append(failover)
    return judged, excused


def failover_duplicates(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    """Per judged failover of a subscription from A to B: the values delivered in B after
    it that had been acknowledged in A before it, their count and the window they span."""
    failovers = frames.failovers(judged_failovers(frames)[0])
    bounds = frames.spark.createDataFrame(
        [(run, _bound_ms(frames, run, settings)) for run in frames.runs],
        "run string, bound_ms long")
    in_b = (F.broadcast(failovers).alias("f").join(
        frames.recvs.alias("r"),
        (F.col("r.run") == F.col("f.run"))
        & (F.col("r.subscription") == F.col("f.subscription"))
        & (F.col("f.topic").isNull() | (F.col("r.topic") == F.col("f.topic")))
        & (F.col("r.cluster") == F.col("f.to_cluster"))
        & (F.col("r.index") > F.col("f.failover_index")))
        .select("f.*", F.col("r.topic").alias("recv_topic"), F.col("r.value").alias("value"),
                F.col("r.index").alias("recv_index")))
    acked = frames.acked().withColumnRenamed("cluster", "from_cluster") \
        .withColumnRenamed("topic", "recv_topic")
    dups = (in_b.join(acked, ["run", "recv_topic", "subscription", "from_cluster", "value"])
            .filter(F.col("ack_index") < F.col("failover_index")))
    return (dups.groupBy("run", "subscription", "from_cluster", "to_cluster",
                         "failover_index", "failover_time")
            .agg(F.countDistinct("value").alias("duplicates"),
                 F.min(F.struct("ack_time", "ack_index")).alias("earliest"),
                 F.min("recv_index").alias("first_recv_index"))
            .join(F.broadcast(bounds), "run")
            .select("*", ((F.col("failover_time") - F.col("earliest.ack_time")) / 1e6)
                    .alias("window_ms")))


def acks_before_failovers(frames: HistoryFrames) -> dict[str, int]:
    """Per run: the acks completed `ok` that some judged failover's duplicates were judged
    against, those of a failed-over subscription in the cluster it left, before it left."""
    acks = frames.acks.alias("a").join(
        F.broadcast(frames.failovers(judged_failovers(frames)[0])).alias("f"),
        (F.col("a.run") == F.col("f.run"))
        & (F.col("a.subscription") == F.col("f.subscription"))
        & (F.col("f.topic").isNull() | (F.col("a.topic") == F.col("f.topic")))
        & (F.col("a.cluster") == F.col("f.from_cluster"))
        & (F.col("a.ack_index") < F.col("f.failover_index")), "left_semi")
    return {row["run"]: row["count"] for row in acks.groupBy("run").count().collect()}


def duplicate_window(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    if not frames.failover_ops:
        return no_anomalies(frames.spark)
    over = failover_duplicates(frames, settings).filter(F.col("window_ms") > F.col("bound_ms"))
    return anomalies("duplicate-window", over, "failover_index",
                     ["failover_index", "earliest.ack_index", "first_recv_index"], weight=None,
                     subscription="subscription", **{"from": "from_cluster", "to": "to_cluster"},
                     duplicates="duplicates", window_ms="window_ms", bound_ms="bound_ms")


def _bound_ms(frames: HistoryFrames, run: str, settings: CheckSettings) -> int:
    if settings.duplicate_window_bound_ms is not None:
        return settings.duplicate_window_bound_ms
    bound = frames.meta.get(run, {}).get("duplicate_window_bound_ms")
    return int(bound) if isinstance(bound, (int, float)) else DEFAULT_DUPLICATE_WINDOW_BOUND_MS
