"""Each judged failover's redeliveries, measured where a value's events already meet.

`duplicate-window` asks, per failover of subscription S from cluster A to B, which values
were delivered in B after it though acknowledged in A before it, and how long before the
failover the earliest of those acks came. Every event of a value reaches one partition of
the per-value pass (`checkers.per_value`), so each partition measures its own values
(`failover_shares`) and the shares only need adding up: their rows all carry no key, so
the cut by key brings them to one partition of the second pass, where `merged_windows`
adds them, one row per failover. The driver then sets each window against its bound
(`judged_windows`): the checker's anomalies, and the windows the statistics report.

Measuring there spares two shuffles of every delivery and acknowledgement that a join in
Spark needs, and one measurement serves both the checker and the statistics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from checkers.anomaly import CheckSettings
from checkers.duplicates import judged_failovers
from checkers.frames import HistoryFrames, SmallFact, detail_field
from checkers.partitions import TextCodes, rows
from history.schema import DEFAULT_DUPLICATE_WINDOW_BOUND_MS

FAILOVER_SHARE = "failover-share"
"""A per-value partition's share of one failover's redeliveries."""
FAILOVER_WINDOW = "failover-window"
"""One failover's redeliveries, merged: every one reaches the driver (not only the first
examples), for the statistics and `duplicate-window`."""
_MS = 1_000_000


def judged_failover_table(frames: HistoryFrames) -> pa.Table:
    """The failovers `duplicate-window` judges (`checkers.duplicates`), for the workers."""
    return frames.failover_table(judged_failovers(frames)[0])


def failover_shares(recvs: pa.Table, acks: pa.Table, failovers: pa.Table,
                    codes: TextCodes) -> pa.Table | None:
    """This partition's share of each failover's redeliveries (`recvs` and `acks` coded
    by `codes`, and so is the `run` of the result): per failover (`run`, `failover`), how
    many of its values were delivered in the cluster failed over to after it and
    acknowledged in the one failed over from before it (`values`), the earliest such ack
    (`ack_index`, `ack_time`) and the first such delivery (`recv_index`). A failover with
    none has no row; with no failover to judge, None."""
    if not failovers.num_rows:
        return None
    delivered = _around(recvs.select(["run", "value", "topic", "subscription", "cluster",
                                      "index"]), failovers, "to_cluster", codes, after=True)
    acked = _around(acks.select(["run", "value", "topic", "subscription", "cluster", "index",
                                 "time"]), failovers, "from_cluster", codes, after=False)
    earliest = acked.group_by(["run", "failover", "value", "topic"]).aggregate(
        [("index", "min"), ("time", "min")])
    again = delivered.select(["run", "failover", "value", "topic", "index"]).join(
        earliest, ["run", "failover", "value", "topic"], join_type="inner")
    shares = again.group_by(["run", "failover"]).aggregate(
        [("value", "count_distinct"), ("index_min", "min"), ("time_min", "min"),
         ("index", "min")])
    return pa.table([shares["run"], shares["failover"], shares["value_count_distinct"],
                     shares["index_min_min"], shares["time_min_min"], shares["index_min"]],
                    names=["run", "failover", "values", "ack_index", "ack_time", "recv_index"])


def _around(events: pa.Table, failovers: pa.Table, cluster: str, codes: TextCodes,
            after: bool) -> pa.Table:
    """`events` in a failed-over subscription, in the failover's `cluster` (its source or
    its target), after or before it, each with the failover's index (`failover`). A
    failover that names no topic is its subscription's on every topic."""
    scope = codes.encode(pa.table({
        "run": failovers["run"], "subscription": failovers["subscription"],
        "cluster": failovers[cluster], "topic": failovers["topic"]}))
    scoped = pa.table({"run": scope["run"], "subscription": scope["subscription"],
                       "cluster": scope["cluster"], "failover_topic": scope["topic"],
                       "any_topic": pc.is_null(failovers["topic"]),
                       "failover": failovers["failover_index"]})
    joined = events.join(scoped, ["run", "subscription", "cluster"], join_type="inner")
    same_topic = pc.or_(joined["any_topic"],
                        pc.fill_null(pc.equal(joined["topic"], joined["failover_topic"]), False))
    side = (pc.greater if after else pc.less)(joined["index"], joined["failover"])
    return joined.filter(pc.and_(same_topic, side))


def merged_windows(found: pa.Table) -> pa.Table:
    """`found` (the per-value pass's findings) with the failover shares it holds added
    up into one `FAILOVER_WINDOW` row per failover: `at` the failover, `pairs` its values,
    `proof0` and `ack_time` the earliest ack, `proof1` the first delivery."""
    is_share = pc.fill_null(pc.equal(found["checker"], FAILOVER_SHARE), False)
    if not pc.any(is_share).as_py():
        return found
    shares = found.filter(is_share)
    merged = shares.group_by(["run", "at"]).aggregate(
        [("pairs", "sum"), ("proof0", "min"), ("ack_time", "min"), ("proof1", "min")])
    windows = rows(found.schema, merged.num_rows, checker=FAILOVER_WINDOW, run=merged["run"],
                   at=merged["at"], pairs=merged["pairs_sum"], proof0=merged["proof0_min"],
                   ack_time=merged["ack_time_min"], proof1=merged["proof1_min"])
    return pa.concat_tables([found.filter(pc.invert(is_share)), windows])


@dataclass(frozen=True)
class Windows:
    """One run's judged failovers with redeliveries, as the statistics report them, and
    those over the bound as `duplicate-window`'s anomalies (by failover, in index order)."""

    statistics: list[dict[str, Any]]
    anomalies: list[dict[str, Any]]


def judged_windows(frames: HistoryFrames, settings: CheckSettings, run: str,
                   merged: list[dict[str, Any]]) -> Windows:
    """Set each merged window (`FAILOVER_WINDOW`'s example: `failover`, `values`,
    `ack_index`, `ack_time`, `recv_index`) against the run's bound: the window is the
    failover's invoke time minus the earliest ack's time."""
    failovers = {f.index: f for f in frames.failover_ops if f.run == run}
    bound = _bound_ms(frames, run, settings)
    statistics, over = [], []
    for window in sorted(merged, key=lambda w: int(w["failover"])):
        failover: SmallFact = failovers[int(window["failover"])]
        window_ms = (failover.time - int(window["ack_time"])) / _MS
        facts = {"subscription": failover.subscription,
                 "from": detail_field(failover, "from"), "to": detail_field(failover, "to")}
        statistics.append({**facts, "index": failover.index, "time_ms": failover.time / _MS,
                           "duplicates": window["values"], "window_ms": window_ms,
                           "bound_ms": bound})
        if window_ms > bound:
            events = sorted({failover.index, int(window["ack_index"]),
                             int(window["recv_index"])})
            over.append({"events": events,
                         **{k: v for k, v in facts.items() if v is not None},
                         "duplicates": window["values"], "window_ms": window_ms,
                         "bound_ms": bound})
    return Windows(statistics, over)


def _bound_ms(frames: HistoryFrames, run: str, settings: CheckSettings) -> int:
    if settings.duplicate_window_bound_ms is not None:
        return settings.duplicate_window_bound_ms
    bound = frames.meta_number(run, "duplicate_window_bound_ms")
    return DEFAULT_DUPLICATE_WINDOW_BOUND_MS if bound is None else int(bound)
