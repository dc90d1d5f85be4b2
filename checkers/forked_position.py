"""Two values at one position: a log that forked, e.g. two owners writing one ledger."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.anomaly import CheckSettings, anomalies
from checkers.frames import HistoryFrames

_EXAMPLE_EVENTS = 6


def forked_position(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    """Positions where sends acknowledged, or deliveries seen, name different values.
    A position is per (topic, cluster, segment); batched messages carry their batch index
    as a third component, so they do not collide."""
    place = ["run", "topic", "place_cluster", "seg", "position"]
    written = (frames.sends().filter((F.col("outcome") == "ok") & F.col("position").isNotNull())
               .select("run", "topic", F.coalesce("cluster", F.lit("")).alias("place_cluster"),
                       F.coalesce("segment", F.lit(-1)).alias("seg"), "position", "value",
                       F.col("done_index").alias("index")))
    seen = frames.recvs.filter(F.col("position").isNotNull()).select(
        "run", "topic", F.coalesce("cluster", F.lit("")).alias("place_cluster"), "seg",
        "position", "value", "index")
    forks = (written.unionByName(seen).groupBy(*place)
             .agg(F.countDistinct("value").alias("values"),
                  F.slice(F.sort_array(F.collect_set("value")), 1, 4).alias("some_values"),
                  F.slice(F.sort_array(F.collect_set("index")), 1, _EXAMPLE_EVENTS).alias("idx"))
             .filter(F.col("values") > 1))
    return anomalies(forks.withColumn("first", F.get(F.col("idx"), 0)), "first",
                     [F.get(F.col("idx"), i) for i in range(_EXAMPLE_EVENTS)],
                     topic="topic", position="position", segment="seg",
                     cluster="place_cluster", values="some_values")
