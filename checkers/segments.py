"""Checks against the segment DAG of scalable topics (PIP-468): no parent takes a write once
a child has, and every key goes to the segment whose hash range holds it.

Both compare each acknowledged send with facts the driver already holds (the layouts'
ranges and ancestry, and each segment's first acknowledged write, gathered while the
history was paired), so one pass of Python workers over the sends decides both, with no
shuffle; only what they find becomes Spark rows.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from checkers.anomaly import CheckSettings, anomalies, no_anomalies
from checkers.frames import HistoryFrames, Segment
from checkers.partitions import Scan, columns, map_scans, rows, scans
from checkers.views import OPERATIONS_FILE, SENDS

_PLACE = ["run", "topic", "segment"]
_SENDS = ["run", "topic", "segment", "outcome", "value", "key", "key_hash", "inv_index",
          "inv_time", "done_index"]
_FOUND = pa.schema([
    ("checker", pa.string()), ("run", pa.string()), ("topic", pa.string()),
    ("segment", pa.int64()), ("value", pa.string()),
    # What one counted unit is: the send itself for `misrouted`; for `dual-write`, every
    # late send of one value to one segment (null here) counts once.
    ("unit", pa.int64()), ("inv_index", pa.int64()), ("done_index", pa.int64()),
    ("child_ok_index", pa.int64()), ("key", pa.string()), ("hash", pa.int64()),
    ("range_start", pa.int64()), ("range_end", pa.int64())])
_UNIT = ["checker", "run", "topic", "segment", "value", "unit"]
"""What a counted finding is grouped by; of its other columns, each unit keeps the least."""
_RANGES = pa.schema([("run", pa.string()), ("topic", pa.string()), ("segment", pa.int64()),
                     ("range_start", pa.int64()), ("range_end", pa.int64())])
_LIMITS = pa.schema([("run", pa.string()), ("topic", pa.string()), ("segment", pa.int64()),
                     ("child_ok_time", pa.int64()), ("child_ok_index", pa.int64())])


def segment_checks(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    """`misrouted`: a send acknowledged on a segment whose range does not hold its key's
    hash (segments never change range, so any layout naming the segment tells it; the
    hash was computed once per distinct key when the history was paired).

    `dual-write`: a send acknowledged on an ancestor segment, invoked after a descendant
    had already acknowledged a send: two segments were writable for one hash."""
    ranges, limits = _ranges(frames), _limits(frames)
    if not ranges.num_rows:
        return no_anomalies(frames.spark)

    def find(scan: Scan) -> list[pa.RecordBatch]:
        sends = SENDS.table(scan.read(SENDS.reads(_SENDS)), _SENDS)
        written = sends.filter(pc.and_(pc.equal(sends["outcome"], "ok"),
                                       pc.is_valid(sends["segment"])))
        found: pa.Table = pa.concat_tables([_misrouted(written, ranges),
                                            _dual_writes(written, limits)])
        batches: list[pa.RecordBatch] = found.to_batches()
        return batches

    found = map_scans(frames.spark, scans(frames.paired, OPERATIONS_FILE), find,
                      from_arrow_schema(_FOUND))
    units = found.groupBy(*_UNIT).agg(
        *[F.min(c).alias(c) for c in _FOUND.names if c not in _UNIT])
    return anomalies(F.col("checker"), units, "inv_index",
                     ["child_ok_index", "inv_index", "done_index"], value="value", key="key",
                     hash="hash", segment="segment", range_start="range_start",
                     range_end="range_end")


def _misrouted(written: pa.Table, ranges: pa.Table) -> pa.Table:
    keyed = written.filter(pc.is_valid(written["key"])).join(ranges, _PLACE)
    hashes = keyed["key_hash"].cast(pa.int64())
    wrong = keyed.filter(pc.or_(pc.less(hashes, keyed["range_start"]),
                                pc.greater(hashes, keyed["range_end"])))
    return rows(_FOUND, wrong.num_rows, checker="misrouted", unit=wrong["inv_index"],
                hash=wrong["key_hash"], **columns(wrong))


def _dual_writes(written: pa.Table, limits: pa.Table) -> pa.Table:
    limited = written.join(limits, _PLACE)
    late = limited.filter(pc.greater(limited["inv_time"], limited["child_ok_time"]))
    return rows(_FOUND, late.num_rows, checker="dual-write",
                **{name: column for name, column in columns(late).items() if name != "key"})


def _ranges(frames: HistoryFrames) -> pa.Table:
    """Each segment's hash range, as any layout names it."""
    return pa.Table.from_pylist([
        {"run": run, "topic": topic, "segment": s.segment_id, "range_start": s.start,
         "range_end": s.end}
        for (run, topic), segments in frames.layouts.items() for s in segments.values()],
        schema=_RANGES)


def _limits(frames: HistoryFrames) -> pa.Table:
    """Per segment with a descendant that took a write: the earliest such write. A send to
    the segment invoked after it is a dual write."""
    limits = []
    for (run, topic), segments in frames.layouts.items():
        for segment_id in segments:
            writes = [frames.first_writes[key] for d in _descendants(segments, segment_id)
                      if (key := (run, topic, d)) in frames.first_writes]
            if writes:
                first = min(writes, key=lambda w: w.index)
                limits.append({"run": run, "topic": topic, "segment": segment_id,
                               "child_ok_time": first.time, "child_ok_index": first.index})
    return pa.Table.from_pylist(limits, schema=_LIMITS)


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
