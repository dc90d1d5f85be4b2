"""The statistics' aggregates: latency quantiles merged from per-task rank summaries stay
within the documented accuracy (and are exact for small groups), and the figures match
what the events say."""

from __future__ import annotations

import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from checkers import aggregates
from checkers.frames import HistoryFrames
from checkers.load import prepare
from checkers.stats import run_stats
from tests.checkers.builder import History


def _merged_quantiles(latencies: np.ndarray, cuts: list[int]) -> dict:
    """The figures of one group whose latencies (whole nanoseconds) several map tasks
    summarised (split at `cuts`)."""
    tasks = np.split(latencies, sorted(cuts))
    entries = pa.concat_tables([aggregates._summaries(pa.table({
        "run": ["r"] * len(task), "f": ["send"] * len(task), "second": [0] * len(task),
        "latency_ns": task})) for task in tasks if len(task)])
    (figures,) = aggregates._quantiles(entries).to_pylist()
    return figures


@given(st.integers(0, 2**32 - 1), st.integers(1, 400), st.lists(st.integers(0, 400)),
       st.sampled_from([5, 50, 1000]))
def test_merged_summaries_misplace_a_quantile_by_less_than_their_accuracy(
        seed, size, cuts, summary_size) -> None:
    rng = np.random.default_rng(seed)
    # Few distinct values, so ties are common; shuffled, as tasks see them.
    latencies = rng.integers(0, 40, size) * rng.choice([500_000, 1_000_000, 7_250_000])
    aggregates.SUMMARY_SIZE, saved = summary_size, aggregates.SUMMARY_SIZE
    try:
        figures = _merged_quantiles(latencies, [c for c in cuts if c <= size])
    finally:
        aggregates.SUMMARY_SIZE = saved
    ordered = np.sort(latencies) / 1e6
    assert figures["count"] == size and figures["max_ms"] == ordered[-1]
    for name, percent in aggregates.QUANTILES.items():
        rank = math.ceil(percent * size / 100)  # 1-based, as percentile_approx ranks
        value = figures[name]
        first, last = np.searchsorted(ordered, value), np.searchsorted(ordered, value, "right")
        assert first < last, "a quantile is one of the group's own latencies"
        error = 0 if first < rank <= last else min(abs(first + 1 - rank), abs(last - rank))
        assert error < size / summary_size
        if size <= summary_size:
            assert value == ordered[rank - 1]


@pytest.mark.spark
def test_the_statistics_figures_are_what_the_events_say(spark, tmp_path) -> None:
    history = History(tmp_path / "history.jsonl")
    history.subscribe("s", "exclusive")
    for n in range(30):  # every 70 ms: invoked at n * 70 + 11 ms, completed 1 ms later
        history.at(n * 70.0 + 10)
        history.send(f"m{n}", outcome="fail" if n % 10 == 9 else "ok")
        history.recv(f"m{n}")
        history.ack(f"m{n}")
    history.send("unknown", outcome="info")  # completed at 2047 ms
    history.drain()
    frames = HistoryFrames.load(spark, {"run": prepare(history.close())})
    stats = run_stats(frames)[0]["run"]

    counts = {(o["f"], o["outcome"]): o["count"] for o in stats["operations"]}
    assert counts[("send", "ok")] == 27 and counts[("send", "fail")] == 3
    assert counts[("send", "info")] == 1 and counts[("recv", "ok")] == 30
    assert counts[("ack", "ok")] == 30 and counts[("subscribe", "ok")] == 1
    assert stats["sends_ok"] == 27 and stats["recvs"] == 30
    sends = {(t["second"], t["outcome"]): t["count"] for t in stats["throughput"]
             if t["f"] == "send"}
    # By second of completion (n * 70 + 12 ms): n = 0 to 14, 15 to 28, then 29.
    assert sends == {(0, "ok"): 14, (0, "fail"): 1, (1, "ok"): 13, (1, "fail"): 1,
                     (2, "fail"): 1, (2, "info"): 1}
    first_second = [row for row in stats["latency"] if row["f"] == "send"
                    and row["second"] == 0]
    assert [(row["count"], row["p50_ms"], row["p99_ms"], row["max_ms"])
            for row in first_second] == [(15, 1.0, 1.0, 1.0)]
