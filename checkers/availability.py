"""A key nobody could write for too long: `unavailable`.

The other checkers judge what the system did with the writes it took. A system can also
keep every promise about those and still fail its users by taking none: a segment left
terminated by a controller that forgot to finish a split, a broker that stays up owning
nothing and answers every lookup with an error. Such harm shows only as sends that wait.

A send waits from its invoke until some send of the same key (topic and cluster), invoked
at or after it, completes `ok`: its own success, or a later one's, proves the key
writable again. Sends that fail or end `info` keep waiting for a later success; without
one, the wait lasts to the key's last recorded send event. A send whose wait exceeds the
run's bound is an anomaly. Faults make keys wait in any system (a session must expire
before another broker takes over), so the bound is the scenario's to set, above what its
faults explain, and runs that set none are not judged.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from checkers.anomaly import CheckSettings, anomalies, no_anomalies
from checkers.frames import HistoryFrames

_MS = 1_000_000
_KEY_SCOPE = ["run", "topic", "cluster", "key"]
"""Where one success proves a key writable: the same key of one topic in one cluster
(unkeyed sends share a null key: the topic's availability)."""


def unavailable_bounds(frames: HistoryFrames, settings: CheckSettings) -> dict[str, float]:
    """The bound, in ms, of each run judged: the command line's, else the run's `meta`."""
    return frames.judged_bounds("unavailable_bound_ms", settings.unavailable_bound_ms)


def unavailable(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    """One anomaly per send that waited longer than its run's bound for its key to take a
    write (see the module's docstring)."""
    bounds = unavailable_bounds(frames, settings)
    if not bounds:
        return no_anomalies(frames.spark)
    bound_frame = frames.spark.createDataFrame(
        [(run, bound) for run, bound in bounds.items()], "run string, bound_ms double")
    sends = (frames.ops.filter(F.col("f") == "send")
             .join(F.broadcast(bound_frame), "run")
             .select(*_KEY_SCOPE, "bound_ms", "inv_index", "inv_time", "outcome",
                     "done_index", "done_time"))
    # The earliest success among the sends invoked at or after each one: a running minimum
    # from the key's last invoke backwards (a struct orders by time, then index).
    from_here_on = (Window.partitionBy(*_KEY_SCOPE)
                    .orderBy(F.col("inv_time").desc(), F.col("inv_index").desc())
                    .rowsBetween(Window.unboundedPreceding, Window.currentRow))
    success = F.when(F.col("outcome") == "ok", F.struct(
        F.col("done_time").alias("time"), F.col("done_index").alias("index")))
    last_event = F.max(F.greatest("inv_time", "done_time")).over(Window.partitionBy(*_KEY_SCOPE))
    waits = (sends.withColumn("writable", F.min(success).over(from_here_on))
             .withColumn("until", F.coalesce(F.col("writable.time"), last_event))
             .withColumn("wait_ns", F.col("until") - F.col("inv_time"))
             .filter(F.col("wait_ns") > F.col("bound_ms") * _MS))
    return anomalies(
        "unavailable", waits, "inv_index", ["inv_index", F.col("writable.index")],
        topic="topic", cluster="cluster", key="key",
        from_ms=F.col("inv_time") / _MS, to_ms=F.col("until") / _MS,
        wait_ms=F.col("wait_ns") / _MS, bound_ms="bound_ms",
        written=F.col("writable").isNotNull())
