"""Did every message reach every subscription that should see it, once, in order, and only
those messages? `lost`, `unexpected`, `failed-delivered`, `duplicate` and `order` of the
history contract, and starquake's `multi-position` and `ack-unapplied`.

All but `order` compare one value's sends, deliveries and acknowledgements; `order`
compares the first deliveries of one key's values. So one finder decides all seven in two
passes in the Python workers, with one shuffle before each: by value
(`checkers.per_value`, where the four rules are spelled out), then by key
(`checkers.order`). Here a failover's duplicates are set aside, and the findings shaped as
anomalies.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from checkers.anomaly import CheckSettings, anomalies
from checkers.failover_windows import FAILOVER_WINDOW, merged_windows
from checkers.frames import HistoryFrames
from checkers.order import with_inversions
from checkers.partitions import decide
from checkers.per_value import FINDINGS, per_value


def deliveries(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    """The anomalies of the seven checkers, each row naming its checker (and the legal
    producer retries, `PRODUCER_RETRY`, counted in the statistics, and the failovers'
    redeliveries, `FAILOVER_WINDOW`, which the driver judges); an `order` row stands for
    all of one key's out-of-order pairs."""
    found = decide(per_value(frames), _by_key, FINDINGS)
    if frames.failover_ops:
        found = _unexplained_by_failover(frames, found)
    window = F.col("checker") == FAILOVER_WINDOW

    def of_window(column: str) -> Column:
        return F.when(window, F.col(column))

    return anomalies(F.col("checker"), found, "at", ["at", "proof0", "proof1", "proof2"],
                     weight=F.coalesce("pairs", F.lit(1)), value="value", topic="topic",
                     subscription="subscription", cluster="cluster", key="key",
                     earlier="earlier", later="later", pairs="pairs", positions="positions",
                     failover=of_window("at"), values=of_window("pairs"),
                     ack_index=of_window("proof0"), ack_time="ack_time",
                     recv_index=of_window("proof1"))


def _by_key(found: pa.Table) -> pa.Table:
    """The second pass over a partition: `order`'s inversions, and the failover shares
    (all of which come to one partition) added up."""
    return merged_windows(with_inversions(found))


def _unexplained_by_failover(frames: HistoryFrames, found: DataFrame) -> DataFrame:
    """A duplicate with a failover into its cluster between the ack and the delivery is
    that failover's (`duplicate-window`), not a duplicate."""
    failovers = frames.failovers()
    return found.alias("d").join(
        F.broadcast(failovers).alias("f"),
        (F.col("d.checker") == "duplicate")
        & (F.col("d.run") == F.col("f.run"))
        & (F.col("d.subscription") == F.col("f.subscription"))
        & (F.col("f.topic").isNull() | (F.col("d.topic") == F.col("f.topic")))
        & (F.col("d.cluster") == F.col("f.to_cluster"))
        & F.col("f.failover_index").between(F.col("d.proof0"), F.col("d.at")),
        "left_anti")
