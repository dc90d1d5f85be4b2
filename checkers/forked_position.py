"""Two values at one position: a log that forked, e.g. two owners writing one ledger."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.anomaly import CheckSettings, anomalies
from checkers.frames import HistoryFrames

_EXAMPLE_EVENTS = 6
_PLACE = ["run", "topic", "place_cluster", "seg", "position"]


def forked_position(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    """Positions where sends acknowledged, or deliveries seen, name different values.
    A position is per (topic, cluster, segment); batched messages carry their batch index
    as a third component, so they do not collide.

    A position forked exactly when its smallest and largest values differ: that cheap
    aggregate screens every position, and only the forked ones gather their examples."""
    written = (frames.sends.filter((F.col("outcome") == "ok") & F.col("position").isNotNull())
               .select("run", "topic", F.coalesce("cluster", F.lit("")).alias("place_cluster"),
                       F.coalesce("segment", F.lit(-1)).alias("seg"), "position", "value",
                       F.col("done_index").alias("index")))
    seen = frames.recvs.filter(F.col("position").isNotNull()).select(
        "run", "topic", F.coalesce("cluster", F.lit("")).alias("place_cluster"), "seg",
        "position", "value", "index")
    placed = written.unionByName(seen)
    forked = (placed.groupBy(*_PLACE).agg(F.min("value").alias("low"), F.max("value").alias("high"))
              .filter(F.col("low") != F.col("high")).select(*_PLACE))
    forks = (placed.join(forked, _PLACE, "left_semi").groupBy(*_PLACE)
             .agg(F.slice(F.sort_array(F.collect_set("value")), 1, 4).alias("some_values"),
                  F.slice(F.sort_array(F.collect_set("index")), 1, _EXAMPLE_EVENTS).alias("idx")))
    return anomalies("forked-position", forks.withColumn("first", F.get(F.col("idx"), 0)), "first",
                     [F.get(F.col("idx"), i) for i in range(_EXAMPLE_EVENTS)],
                     topic="topic", position="position", segment="seg",
                     cluster="place_cluster", values="some_values")
