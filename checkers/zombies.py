"""A broker that stayed up unable to serve: `zombie-broker`.

The harness's `health` observations (`harness.health_probe`) say, about once a second,
what each broker's health check answered. A broker that kept answering that it cannot
serve, with no healthy answer and no moment down in between, for longer than the run's
bound is a zombie: PIP-57 wants such a broker (its metadata session lost and not
regained) to shut down once its retries are spent, so that whatever supervises it starts
a fresh one. Readings without an answer (a paused broker, a probe that timed out) neither
break a stretch nor extend it. The bound comes from the run's `meta`
(`zombie_broker_bound_ms`), and runs without one are not judged: how long a broker may
try before it gives up is the deployment's setting.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame

from checkers.anomaly import CheckSettings
from checkers.frames import HistoryFrames, SmallFact
from checkers.stretches import maximal_stretches
from history.schema import detail_object

_MS = 1_000_000
_ANOMALY_ROWS = "checker string, run string, sort_key long, weight long, example string"
BOUND = "zombie_broker_bound_ms"


@dataclass(frozen=True)
class _Reading:
    fact: SmallFact
    detail: dict[str, Any]

    @property
    def unhealthy(self) -> bool:
        return self.detail.get("answer") == "unhealthy"


def zombie_bounds(frames: HistoryFrames, settings: CheckSettings) -> dict[str, float]:
    """The bound, in ms, of each run judged: its `meta`'s."""
    return frames.judged_bounds(BOUND)


def zombie_brokers(frames: HistoryFrames, settings: CheckSettings) -> DataFrame:
    """One anomaly per stretch of consecutive `unhealthy` readings of one broker (readings
    without an answer left out) spanning more than its run's bound."""
    bounds = zombie_bounds(frames, settings)
    by_broker: dict[tuple[str, str | None, str | None], list[_Reading]] = defaultdict(list)
    for fact in frames.health_readings:
        detail = detail_object(fact.detail)
        if fact.run in bounds and detail.get("answer") != "unknown":
            by_broker[(fact.run, fact.cluster, detail.get("broker"))].append(
                _Reading(fact, detail))
    found = []
    for (run, cluster, broker), readings in by_broker.items():
        stretches = maximal_stretches(sorted(readings, key=lambda r: r.fact.index),
                                      lambda r: r.unhealthy, lambda _, r: r.unhealthy)
        for first, last in stretches:
            span_ms = (last.fact.time - first.fact.time) / _MS
            if span_ms > bounds[run]:
                example = {"events": [first.fact.index, last.fact.index], "broker": broker,
                           "cluster": cluster, "from_ms": first.fact.time / _MS,
                           "to_ms": last.fact.time / _MS, "span_ms": span_ms,
                           "bound_ms": bounds[run], "reason": last.detail.get("reason")}
                found.append(("zombie-broker", run, first.fact.index, 1, json.dumps(example)))
    return frames.spark.createDataFrame(found, _ANOMALY_ROWS)
