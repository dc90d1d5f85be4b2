"""Checks against the segment DAG of scalable topics (PIP-468): no parent takes a write once
a child has, and every key goes to the segment whose hash range holds it."""

from __future__ import annotations

import mmh3
import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import IntegerType

from checkers.anomaly import CheckSettings, anomalies
from checkers.frames import HistoryFrames, Segment

HASH_SPACE = 65536


def key_hash(key: str) -> int:
    """The spec's key hash: murmur3 x86 32-bit, seed 0, of the UTF-8 bytes, made
    non-negative, modulo 65536."""
    return (mmh3.hash(key.encode(), 0) & 0x7FFFFFFF) % HASH_SPACE


@F.pandas_udf(IntegerType())
def _key_hash_udf(keys: pd.Series) -> pd.Series:
    return keys.map(key_hash)


def misrouted(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    """A send acknowledged on a segment whose range does not hold the key's hash. Segments
    never change range, so any layout that names the segment tells its range."""
    rows = [(run, topic, s.segment_id, s.start, s.end)
            for (run, topic), segments in frames.layouts.items() for s in segments.values()]
    if not rows:
        return _none(frames)
    ranges = frames.spark.createDataFrame(
        rows, "run string, topic string, segment long, range_start long, range_end long")
    sends = (frames.sends().filter((F.col("outcome") == "ok") & F.col("segment").isNotNull()
                                   & F.col("key").isNotNull())
             .join(F.broadcast(ranges), ["run", "topic", "segment"])
             .withColumn("hash", _key_hash_udf("key")))
    wrong = sends.filter((F.col("hash") < F.col("range_start")) | (F.col("hash") > F.col("range_end")))
    return anomalies(wrong, "inv_index", ["inv_index", "done_index"], value="value", key="key",
                     hash="hash", segment="segment", range_start="range_start",
                     range_end="range_end")


def dual_write(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    """A send acknowledged on an ancestor segment, invoked after a descendant had already
    acknowledged a send: two segments were writable for one hash."""
    sends = frames.sends().filter((F.col("outcome") == "ok") & F.col("segment").isNotNull())
    firsts = (sends.groupBy("run", "topic", "segment")
              .agg(F.min(F.struct("done_time", "done_index")).alias("first")).collect())
    first_ok = {(r["run"], r["topic"], r["segment"]): (r["first"]["done_time"],
                                                        r["first"]["done_index"])
                for r in firsts}
    thresholds = []
    for (run, topic), segments in frames.layouts.items():
        for segment_id in segments:
            witnessed = [first_ok[(run, topic, d)] for d in _descendants(segments, segment_id)
                         if (run, topic, d) in first_ok]
            if witnessed:
                thresholds.append((run, topic, segment_id, *min(witnessed)))
    if not thresholds:
        return _none(frames)
    limits = frames.spark.createDataFrame(
        thresholds, "run string, topic string, segment long, child_ok_time long, "
                    "child_ok_index long")
    late = (sends.join(F.broadcast(limits), ["run", "topic", "segment"])
            .filter(F.col("inv_time") > F.col("child_ok_time"))
            .groupBy("run", "topic", "segment", "value")
            .agg(F.min("inv_index").alias("inv_index"), F.min("done_index").alias("done_index"),
                 F.min("child_ok_index").alias("child_ok_index")))
    return anomalies(late, "inv_index", ["child_ok_index", "inv_index", "done_index"],
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


def _none(frames: HistoryFrames) -> DataFrame:
    return frames.spark.createDataFrame([], "run string, sort_key long, weight long, example string")
