"""Did every message reach every subscription that should see it, and only those messages?

`lost`, `unexpected` and `failed-delivered` of the history contract.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from checkers.anomaly import CheckSettings, anomalies
from checkers.frames import HistoryFrames


def lost(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    """An acknowledged send that a subscription existing before it never received, in any
    cluster. Undecidable without a completed drain (the registry says so)."""
    sends = frames.sends.filter(F.col("outcome") == "ok")
    received = frames.recvs.select("run", "topic", "subscription", "value").distinct()
    owed = (sends.join(frames.subscriptions(), ["run", "topic"])
            .filter(F.col("since_index") < F.col("inv_index")))
    missing = owed.join(received, ["run", "topic", "subscription", "value"], "left_anti")
    return anomalies(missing, "inv_index", ["inv_index", "done_index", "since_index"],
                     value="value", topic="topic", subscription="subscription")


def unexpected(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    """A delivery of a value no send ever invoked; counted per (subscription, value)."""
    invoked = frames.sends.select("run", "value").distinct()
    strays = (frames.recvs.join(invoked, ["run", "value"], "left_anti")
              .groupBy("run", "topic", "subscription", "value")
              .agg(F.min("index").alias("recv_index")))
    return anomalies(strays, "recv_index", ["recv_index"],
                     value="value", topic="topic", subscription="subscription")


def failed_delivered(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    """A delivery of a value whose send completed `fail` (certainly not written)."""
    failed = frames.sends.filter(F.col("outcome") == "fail").select(
        "run", "value", "inv_index", "done_index")
    delivered = (frames.recvs.join(failed, ["run", "value"])
                 .groupBy("run", "value", "inv_index", "done_index")
                 .agg(F.min("index").alias("recv_index")))
    return anomalies(delivered, "recv_index", ["inv_index", "done_index", "recv_index"],
                     value="value")
