"""Did every message reach every subscription that should see it, once, and only those
messages? `lost`, `unexpected`, `failed-delivered` and `duplicate` of the history contract.

All four compare one value's sends, deliveries and acknowledgements, so they are decided
in one pass: a single shuffle by (run, value) gathers each value's facts into one row, and
each anomaly is a filter over those few facts (a handful of array elements, in the JVM).
Shuffling deliveries and sends once, rather than once per checker on its own keys, is
what this buys; the rows that come out are grouped on keys that include (run, value), so
the grouping needs no second shuffle.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from checkers.anomaly import CheckSettings, anomalies
from checkers.frames import ACK_SCOPE, HistoryFrames

# What each value contributes, gathered per (run, value).
_SEND = ("topic", "outcome", "inv_index", "done_index", "owed")
_RECV = ("index", "topic", "subscription", "cluster")
_ACK = ("topic", "subscription", "cluster", "ack_index")
# One finding, before grouping: its checker, its facts, `at` (its own sort key, when it has
# one), `proof` (other proving events) and `delivery` (a delivery whose earliest counts).
_FINDING = ("struct<checker: string, topic: string, subscription: string, cluster: string, "
            "at: long, proof: array<long>, delivery: long>")


def deliveries(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    """The anomalies of the four checkers, each row naming its checker."""
    facts = _per_value(frames)
    value_known = F.col("value").isNotNull()
    findings = facts.select("run", "value", F.inline(F.concat(
        _lost(value_known), _unexpected(value_known), _failed_delivered(value_known),
        _duplicate(value_known))))
    # Keys that include (run, value): no shuffle. The earliest delivery of a group counts.
    grouped = (findings.groupBy("run", "value", "checker", "topic", "subscription", "cluster",
                                "at", "proof").agg(F.min("delivery").alias("delivery")))
    if frames.failover_ops:
        grouped = _unexplained_by_failover(frames, grouped)
    return anomalies(F.col("checker"), grouped, F.coalesce("at", "delivery"),
                     ["at", F.get("proof", 0), F.get("proof", 1), "delivery"],
                     value="value", topic="topic", subscription="subscription",
                     cluster="cluster")


def _per_value(frames: HistoryFrames) -> DataFrame:
    """One row per (run, value): its sends (each with the subscriptions that existed before
    it was invoked, on its topic), its deliveries and its acknowledgements."""
    subscribed = (frames.subscriptions()
                  .groupBy("run", "topic")
                  .agg(F.collect_list(F.struct("subscription", "since_index")).alias("subs")))
    sends = (frames.sends.join(F.broadcast(subscribed), ["run", "topic"], "left")
             .select("run", "value", F.struct(
                 "topic", "outcome", "inv_index", "done_index",
                 F.filter(F.coalesce("subs", F.array()),
                          lambda s: s["since_index"] < F.col("inv_index")).alias("owed"))
                 .alias("send")))
    recvs = frames.recvs.select("run", "value", F.struct(*_RECV).alias("recv"))
    acks = frames.acks.filter(~F.col("cumulative")).select(
        "run", "value", F.struct(*_ACK).alias("ack"))
    if frames.cumulative_ack_runs:
        acks = acks.unionByName(frames.covered_by_cumulative_acks().select(
            "run", "value", F.struct(*ACK_SCOPE[1:], F.col("ack.ack_index").alias("ack_index"))
            .alias("ack")))
    return (sends.unionByName(recvs, allowMissingColumns=True)
            .unionByName(acks, allowMissingColumns=True)
            .groupBy("run", "value")
            .agg(F.collect_list("send").alias("sends"), F.collect_list("recv").alias("recvs"),
                 F.collect_list("ack").alias("acks")))


def _finding(checker: str, topic: Column | None = None, subscription: Column | None = None,
             cluster: Column | None = None, at: Column | None = None,
             proof: list[Column] = (), delivery: Column | None = None) -> Column:
    fields = {"checker": F.lit(checker), "topic": topic, "subscription": subscription,
              "cluster": cluster, "at": at, "proof": F.array(*proof), "delivery": delivery}
    return F.struct(*[(F.lit(None) if c is None else c).alias(n) for n, c in fields.items()]
                    ).cast(_FINDING)


def _none() -> Column:
    return F.array().cast(f"array<{_FINDING}>")


def _lost(value_known: Column) -> Column:
    """Per acknowledged send and subscription owed it: no delivery in that subscription,
    in any cluster. A send with no value can never be shown delivered."""
    def received(send: Column, sub: Column) -> Column:
        return value_known & F.exists(F.col("recvs"), lambda r: F.coalesce(
            (r["topic"] == send["topic"]) & (r["subscription"] == sub["subscription"]),
            F.lit(False)))

    acknowledged = F.filter(F.col("sends"), lambda s: s["outcome"] == "ok")
    return F.flatten(F.transform(acknowledged, lambda s: F.transform(
        F.filter(s["owed"], lambda sub: ~received(s, sub)),
        lambda sub: _finding("lost", s["topic"], sub["subscription"], at=s["inv_index"],
                             proof=[s["done_index"], sub["since_index"]]))))


def _unexpected(value_known: Column) -> Column:
    """Every delivery of a value no send invoked; grouping keeps each subscription's first."""
    return F.when(~value_known | (F.size("sends") == 0), F.transform(
        F.col("recvs"), lambda r: _finding("unexpected", r["topic"], r["subscription"],
                                           delivery=r["index"]))).otherwise(_none())


def _failed_delivered(value_known: Column) -> Column:
    """Deliveries of a value whose send failed; grouping keeps the first per send."""
    failed = F.filter(F.col("sends"), lambda s: s["outcome"] == "fail")
    return F.when(value_known, F.flatten(F.transform(failed, lambda s: F.transform(
        F.col("recvs"), lambda r: _finding("failed-delivered", at=None,
                                           proof=[s["inv_index"], s["done_index"]],
                                           delivery=r["index"]))))).otherwise(_none())


def _duplicate(value_known: Column) -> Column:
    """Deliveries after the value's earliest ack in the same subscription and cluster."""
    def earliest_ack(r: Column) -> Column:
        return F.array_min(F.transform(F.filter(F.col("acks"), lambda a: F.coalesce(
            (a["topic"] == r["topic"]) & (a["subscription"] == r["subscription"])
            & (a["cluster"] == r["cluster"]), F.lit(False))), lambda a: a["ack_index"]))

    with_ack = F.transform(F.col("recvs"), lambda r: F.struct(r.alias("r"),
                                                              earliest_ack(r).alias("ack")))
    after = F.filter(with_ack, lambda x: x["ack"] < x["r"]["index"])
    return F.when(value_known, F.transform(after, lambda x: _finding(
        "duplicate", x["r"]["topic"], x["r"]["subscription"], x["r"]["cluster"],
        at=x["r"]["index"], proof=[x["ack"]]))).otherwise(_none())


def _unexplained_by_failover(frames: HistoryFrames, grouped: DataFrame) -> DataFrame:
    """A duplicate with a failover into its cluster between the ack and the delivery is
    that failover's (`duplicate-window`), not a duplicate."""
    failovers = frames.failovers()
    return grouped.alias("d").join(
        F.broadcast(failovers).alias("f"),
        (F.col("d.checker") == "duplicate")
        & (F.col("d.run") == F.col("f.run"))
        & (F.col("d.subscription") == F.col("f.subscription"))
        & (F.col("f.topic").isNull() | (F.col("d.topic") == F.col("f.topic")))
        & (F.col("d.cluster") == F.col("f.to_cluster"))
        & F.col("f.failover_index").between(F.get(F.col("d.proof"), 0), F.col("d.at")),
        "left_anti")
