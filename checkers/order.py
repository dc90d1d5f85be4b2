"""Per-key ordering for ordered subscriptions: a key's messages are first delivered in the
order they were sent, whenever one send was acknowledged before the next was invoked."""

from __future__ import annotations

import numpy as np
import pandas as pd
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from checkers.anomaly import CheckSettings, anomalies
from checkers.frames import HistoryFrames
from checkers.schema import ORDERED_MODES

_GROUP = ["run", "topic", "subscription", "key"]
_PAIRS_SCHEMA = ("run string, topic string, subscription string, key string, pairs long, "
                 "earlier_value string, later_value string, earlier_ok long, later_invoke long, "
                 "earlier_first_recv long, later_first_recv long")


def order(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    ordered = frames.subscriptions().filter(F.col("mode").isin(*ORDERED_MODES)).select(
        "run", "topic", "subscription")
    first_deliveries = (frames.recvs.join(F.broadcast(ordered), ["run", "topic", "subscription"])
                        .groupBy("run", "topic", "subscription", "value")
                        .agg(F.min("index").alias("first_recv")))
    sends = frames.sends().filter(F.col("key").isNotNull()).select(
        "run", "topic", "value", "key", "inv_index",
        F.when(F.col("outcome") == "ok", F.col("done_index")).alias("ok_index"))
    rows = first_deliveries.join(sends, ["run", "topic", "value"])
    suspects = _groups_with_inversions(rows)
    pairs = (rows.join(suspects, _GROUP, "left_semi")
             .groupBy(*_GROUP).applyInPandas(_count_inversions, _PAIRS_SCHEMA))
    return anomalies(pairs, "later_invoke",
                     ["earlier_ok", "later_invoke", "later_first_recv", "earlier_first_recv"],
                     weight="pairs", topic="topic", subscription="subscription", key="key",
                     earlier="earlier_value", later="later_value", pairs="pairs")


def _groups_with_inversions(rows: DataFrame) -> DataFrame:
    """Cheap screen in Spark: a key is suspect when some send is first delivered before a
    send that was acknowledged before it was even invoked. Legal histories stop here."""
    completions = rows.filter(F.col("ok_index").isNotNull()).select(
        *_GROUP, F.col("ok_index").alias("at"), F.lit(0).alias("kind"), "first_recv")
    invokes = rows.select(*_GROUP, F.col("inv_index").alias("at"), F.lit(1).alias("kind"),
                          "first_recv")
    so_far = Window.partitionBy(*_GROUP).orderBy("at", "kind").rowsBetween(
        Window.unboundedPreceding, Window.currentRow)
    earlier_max = F.max(F.when(F.col("kind") == 0, F.col("first_recv"))).over(so_far)
    return (completions.unionByName(invokes).withColumn("earlier_max", earlier_max)
            .filter((F.col("kind") == 1) & (F.col("earlier_max") > F.col("first_recv")))
            .select(*_GROUP).distinct())


def _count_inversions(group: pd.DataFrame) -> pd.DataFrame:
    """Exact count of pairs (a, b) with a acknowledged before b was invoked and b first
    delivered before a: a sweep over invokes with a Fenwick tree over delivery ranks."""
    first_recv = group["first_recv"].to_numpy()
    ranks = np.argsort(np.argsort(first_recv)) + 1
    done = group["ok_index"].to_numpy(dtype="float64")
    by_ok = [i for i in np.argsort(done, kind="stable") if not np.isnan(done[i])]
    tree = np.zeros(len(group) + 1, dtype=np.int64)
    inserted, next_a, pairs = 0, 0, 0
    example: tuple[int, int] | None = None
    for b in np.argsort(group["inv_index"].to_numpy(), kind="stable"):
        while next_a < len(by_ok) and done[by_ok[next_a]] < group["inv_index"].iat[b]:
            i = ranks[by_ok[next_a]]
            while i < len(tree):
                tree[i] += 1
                i += i & -i
            inserted += 1
            next_a += 1
        at_or_below, i = 0, ranks[b]
        while i > 0:
            at_or_below += tree[i]
            i -= i & -i
        later_delivered = inserted - at_or_below
        if later_delivered and example is None:
            candidates = by_ok[:next_a]
            example = (max(candidates, key=lambda a: first_recv[a]), b)
        pairs += later_delivered
    if example is None:
        return pd.DataFrame(columns=_PAIRS_SCHEMA_COLUMNS)
    a, b = example
    head = group.iloc[0]
    return pd.DataFrame([{
        "run": head["run"], "topic": head["topic"], "subscription": head["subscription"],
        "key": head["key"], "pairs": pairs,
        "earlier_value": group["value"].iat[a], "later_value": group["value"].iat[b],
        "earlier_ok": int(done[a]), "later_invoke": int(group["inv_index"].iat[b]),
        "earlier_first_recv": int(first_recv[a]), "later_first_recv": int(first_recv[b]),
    }])


_PAIRS_SCHEMA_COLUMNS = [part.split()[0] for part in _PAIRS_SCHEMA.split(", ")]
