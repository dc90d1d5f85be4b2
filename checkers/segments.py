"""Checks against the segment DAG of scalable topics (PIP-468): no parent takes a write once
a child has, and every key goes to the segment whose hash range holds it."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.anomaly import CheckSettings, anomalies, no_anomalies
from checkers.frames import HistoryFrames, Segment


def misrouted(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    """A send acknowledged on a segment whose range does not hold the key's hash. Segments
    never change range, so any layout that names the segment tells its range. The hash
    was computed once per distinct key when the history was paired (`key_hash`)."""
    rows = [(run, topic, s.segment_id, s.start, s.end)
            for (run, topic), segments in frames.layouts.items() for s in segments.values()]
    if not rows:
        return no_anomalies(frames.spark)
    ranges = frames.spark.createDataFrame(
        rows, "run string, topic string, segment long, range_start long, range_end long")
    sends = (frames.sends.filter((F.col("outcome") == "ok") & F.col("segment").isNotNull()
                                   & F.col("key").isNotNull())
             .join(F.broadcast(ranges), ["run", "topic", "segment"])
             .withColumnRenamed("key_hash", "hash"))
    wrong = sends.filter((F.col("hash") < F.col("range_start")) | (F.col("hash") > F.col("range_end")))
    return anomalies("misrouted", wrong, "inv_index", ["inv_index", "done_index"], value="value", key="key",
                     hash="hash", segment="segment", range_start="range_start",
                     range_end="range_end")


def dual_write(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    """A send acknowledged on an ancestor segment, invoked after a descendant had already
    acknowledged a send: two segments were writable for one hash. The first write of each
    segment is a small aggregate joined to the ancestry the layouts give, in the plan."""
    lineage = [(run, topic, segment_id, descendant)
               for (run, topic), segments in frames.layouts.items()
               for segment_id in segments for descendant in _descendants(segments, segment_id)]
    if not lineage:
        return no_anomalies(frames.spark)
    descendants = frames.spark.createDataFrame(
        lineage, "run string, topic string, segment long, descendant long")
    sends = frames.sends.filter((F.col("outcome") == "ok") & F.col("segment").isNotNull())
    # Times never decrease in index order (spec), so the smallest index and the smallest
    # time are the same event's: two hash aggregates, where a minimum of (time, index)
    # pairs would sort every send.
    firsts = (sends.groupBy("run", "topic", F.col("segment").alias("descendant"))
              .agg(F.min("done_time").alias("child_ok_time"),
                   F.min("done_index").alias("child_ok_index")))
    limits = (F.broadcast(descendants).join(firsts, ["run", "topic", "descendant"])
              .groupBy("run", "topic", "segment")
              .agg(F.min("child_ok_time").alias("child_ok_time"),
                   F.min("child_ok_index").alias("child_ok_index")))
    late = (sends.join(F.broadcast(limits), ["run", "topic", "segment"])
            .filter(F.col("inv_time") > F.col("child_ok_time"))
            .groupBy("run", "topic", "segment", "value")
            .agg(F.min("inv_index").alias("inv_index"), F.min("done_index").alias("done_index"),
                 F.min("child_ok_index").alias("child_ok_index")))
    return anomalies("dual-write", late, "inv_index", ["child_ok_index", "inv_index", "done_index"],
                     value="value", segment="segment")


def _descendants(segments: dict[int, Segment], root: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for segment in segments.values():
        for parent in segment.parents:
            children.setdefault(parent, []).append(segment.segment_id)
    found: set[int] = set()
    stack = list(children.get(root, ()))
    while stack:
        segment_id = stack.pop()
        if segment_id not in found:
            found.add(segment_id)
            stack.extend(children.get(segment_id, ()))
    return found
