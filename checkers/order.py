"""Per-key ordering for ordered subscriptions: a key's messages are first delivered in the
order they were sent, whenever one send was acknowledged before the next was invoked.

Each key's sends are gathered once (a per-key aggregate), and a sweep in the JVM screens
the key: walking its acknowledgements and invokes in index order, an invoke whose message
was first delivered before some already acknowledged message is an inversion. Only keys
that fail the screen (none, in a legal history) reach Python for the exact pair count.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from checkers.anomaly import CheckSettings, anomalies
from checkers.frames import HistoryFrames
from checkers.schema import ORDERED_MODES

_GROUP = ["run", "topic", "subscription", "key"]
_PAIRS_SCHEMA = ("run string, topic string, subscription string, key string, pairs long, "
                 "earlier_value string, later_value string, earlier_ok long, later_invoke long, "
                 "earlier_first_recv long, later_first_recv long")
_PAIRS_SCHEMA_COLUMNS = [part.split()[0] for part in _PAIRS_SCHEMA.split(", ")]


def order(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    ordered = frames.subscriptions().filter(F.col("mode").isin(*ORDERED_MODES)).select(
        "run", "topic", "subscription")
    deliveries = frames.recvs.join(F.broadcast(ordered), ["run", "topic", "subscription"])
    sends = frames.sends.filter(F.col("key").isNotNull()).select(
        "run", "topic", "value", "key", "inv_index",
        F.when(F.col("outcome") == "ok", F.col("done_index")).alias("ok_index"))
    # Grouping on a superset of the join's keys reuses the join's partitioning.
    firsts = (deliveries.join(sends, ["run", "topic", "value"])
              .groupBy(*_GROUP, "value", "inv_index", "ok_index")
              .agg(F.min("index").alias("first_recv")))
    per_key = (firsts.groupBy(*_GROUP)
               .agg(F.collect_list(F.struct("value", "inv_index", "ok_index", "first_recv"))
                    .alias("sends")))
    # The suspects' sends come from the gathered lists, so `firsts` is computed once.
    suspects = (per_key.filter(_has_inversion(F.col("sends")))
                .select(*_GROUP, F.inline("sends")))
    pairs = suspects.groupBy(*_GROUP).applyInPandas(_count_inversions, _PAIRS_SCHEMA)
    return anomalies("order", pairs, "later_invoke",
                     ["earlier_ok", "later_invoke", "later_first_recv", "earlier_first_recv"],
                     weight="pairs", topic="topic", subscription="subscription", key="key",
                     earlier="earlier_value", later="later_value", pairs="pairs")


def _has_inversion(sends: Column) -> Column:
    """Sweep one key's acknowledgements (kind 0) and invokes (kind 1) in index order,
    keeping the latest first delivery among the acknowledged messages: an invoke whose
    message was first delivered earlier than that is an inversion."""
    acked = F.transform(F.filter(sends, lambda s: s["ok_index"].isNotNull()),
                        lambda s: F.struct(s["ok_index"].alias("at"), F.lit(0).alias("kind"),
                                           s["first_recv"].alias("first_recv")))
    invoked = F.transform(sends, lambda s: F.struct(s["inv_index"].alias("at"),
                                                    F.lit(1).alias("kind"),
                                                    s["first_recv"].alias("first_recv")))
    start = F.struct(F.lit(-1).cast("long").alias("latest"), F.lit(False).alias("inverted"))

    def step(state: Column, event: Column) -> Column:
        is_ack = event["kind"] == 0
        return F.struct(
            F.when(is_ack, F.greatest(state["latest"], event["first_recv"]))
            .otherwise(state["latest"]).alias("latest"),
            (state["inverted"] | (~is_ack & (state["latest"] > event["first_recv"])))
            .alias("inverted"))

    return F.aggregate(F.array_sort(F.concat(acked, invoked)), start, step)["inverted"]


def _count_inversions(group: pd.DataFrame) -> pd.DataFrame:
    """Exact count of pairs (a, b) with a acknowledged before b was invoked and b first
    delivered before a, vectorised: acknowledgements and invokes merged in index order,
    and for each invoke the acknowledgements before it with a later first delivery are
    counted one bit of the delivery rank at a time (a stable sort and a running sum per
    bit), O(n log² n) in numpy rather than a Python loop."""
    first_recv = group["first_recv"].to_numpy()
    invoked = group["inv_index"].to_numpy()
    done = group["ok_index"].to_numpy(dtype="float64")
    n = len(group)
    rank = np.argsort(np.argsort(first_recv, kind="stable"), kind="stable")
    acked = np.flatnonzero(~np.isnan(done))
    when = np.concatenate([done[acked], invoked.astype("float64")])
    row = np.concatenate([acked, np.arange(n)])
    is_invoke = np.concatenate([np.zeros(len(acked), bool), np.ones(n, bool)])
    sweep = np.argsort(when, kind="stable")
    value, row, is_invoke = rank[row[sweep]], row[sweep], is_invoke[sweep]
    later_delivered = np.zeros(len(sweep), dtype=np.int64)
    for bit in range(max(1, n.bit_length())):
        high, this_bit = value >> (bit + 1), (value >> bit) & 1
        by_high = np.argsort(high, kind="stable")  # sweep order kept within equal prefixes
        hits = ((~is_invoke) & (this_bit == 1))[by_high].astype(np.int64)
        before = np.cumsum(hits) - hits
        starts = np.r_[True, high[by_high][1:] != high[by_high][:-1]]
        before -= np.maximum.accumulate(np.where(starts, before, 0))
        asks = (is_invoke & (this_bit == 0))[by_high]
        later_delivered[by_high[asks]] += before[asks]
    pairs = int(later_delivered[is_invoke].sum())
    if not pairs:
        return pd.DataFrame(columns=_PAIRS_SCHEMA_COLUMNS)
    first = int(np.flatnonzero(is_invoke & (later_delivered > 0))[0])
    b = row[first]
    earlier = acked[done[acked] < invoked[b]]
    a = earlier[np.argmax(first_recv[earlier])]
    head = group.iloc[0]
    return pd.DataFrame([{
        "run": head["run"], "topic": head["topic"], "subscription": head["subscription"],
        "key": head["key"], "pairs": pairs,
        "earlier_value": group["value"].iat[a], "later_value": group["value"].iat[b],
        "earlier_ok": int(done[a]), "later_invoke": int(invoked[b]),
        "earlier_first_recv": int(first_recv[a]), "later_first_recv": int(first_recv[b]),
    }])
