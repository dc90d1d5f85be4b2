"""What a checker finds: a finder from the shared frames to a DataFrame of anomalies
(`history.checker_registry` declares the checkers, `checkers.registry` binds their finders).

An anomaly row is `(checker, run, sort_key, weight, example)`: usually one row per counted unit (a
pair, a value, an event, a failover, as the spec defines each count) with weight 1; a row
may stand for several units (all of one key's out-of-order pairs) with that many as its
weight. The count is the sum of weights; the examples are the first rows by `sort_key`,
each a JSON object naming its proving events under `events`.

A finder may decide several checkers in one pass (`lost`, `unexpected`, `failed-delivered`
and `duplicate` all compare one value's sends, deliveries and acks); its rows name their
checker, and a check runs each finder once however many checkers share it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from checkers.frames import HistoryFrames


@dataclass(frozen=True)
class CheckSettings:
    duplicate_window_bound_ms: int | None = None
    """Overrides every run's `meta` bound when set (the command-line flag)."""
    unavailable_bound_ms: int | None = None
    """`unavailable`'s bound for every run (the command-line flag); without it, only runs
    whose `meta` sets one are judged."""


ANOMALY_ROWS = "checker string, run string, sort_key long, weight long, example string"
"""The schema of every finder's rows (see the module's docstring)."""

Finder = Callable[[HistoryFrames, CheckSettings], DataFrame]
"""Anomaly rows of one or more checkers, each naming its checker."""


def undecided_rows(checker: str) -> str:
    """The name a finder's rows carry for the units of `checker` it could not judge (an
    entry's `undecided`, `history.checker_registry`)."""
    return f"{checker}:undecided"


def anomalies(checker: str | Column, frame: DataFrame, sort_key: str | Column,
              events: list[str | Column], weight: Column | None = None,
              **facts: str | Column) -> DataFrame:
    """Shape a checker's findings: `events` are the columns holding proving indexes.
    `checker` is its name, or a column naming it when one finder decides several; facts
    that are null are left out of the example."""
    indexes = F.array(*[F.col(e) if isinstance(e, str) else e for e in events])
    example = F.to_json(F.struct(
        F.array_sort(F.array_distinct(F.filter(indexes, lambda i: i.isNotNull()))).alias("events"),
        *[(F.col(v) if isinstance(v, str) else v).alias(k) for k, v in facts.items()]))
    key = F.col(sort_key) if isinstance(sort_key, str) else sort_key
    units = F.lit(1) if weight is None else weight
    name = F.lit(checker) if isinstance(checker, str) else checker
    return frame.select(name.alias("checker"), "run", key.cast("long").alias("sort_key"),
                        units.cast("long").alias("weight"), example.alias("example"))


def no_anomalies(spark: SparkSession) -> DataFrame:
    """A checker's answer when the history cannot have its anomaly (no layout, no failover)."""
    return spark.createDataFrame([], ANOMALY_ROWS)
