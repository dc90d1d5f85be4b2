"""The aggregates behind the statistics, computed by Python workers from the paired files.

Each map task (`checkers.partitions.Scan`) aggregates its own rows: counts and the last
moment per operation and outcome, completions per second, and per operation and second of
invocation a summary of the latencies; per fault interval (`INTERVALS`, which the driver
knows from the nemesis's operations before any job), the client operations invoked in it
by outcome and the first acknowledged send completed at or after its end; and the acks
that judged failovers were measured against (`duplicate-window`'s `acks_judged`). Those
partial rows are shuffled by second as Arrow payloads and merged by the reducing worker,
so the driver receives one row per figure, all from one pass over the files. Spark's own
aggregates did the same work with several times the CPU, most of it compiling their
generated code, and joining the intervals and failovers in Spark cost three more scans
after the checkers' (docs/performance.md).

Latency quantiles come from mergeable rank summaries: a task keeps a group's latencies
whole when it has at most `SUMMARY_SIZE` of them, else every `s`-th in sorted order
(`s = ceil(n / SUMMARY_SIZE)`) weighted by the `s` it stands for. Each summary misplaces
a value's rank by less than `s`, so merged ranks are off by less than 1/`SUMMARY_SIZE` of
the group: the 1/1000 accuracy the history spec documents, and exact for small groups.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from checkers.frames import HistoryFrames
from checkers.partitions import Scan, columns, decide, gather, rows, scatter_scans
from checkers.views import ACKS, OBSERVATIONS_FILE
from history.schema import OBSERVATIONS

NOT_CLIENTS = ("nemesis", "admin", "observer", "harness")
SUMMARY_SIZE = 1000
QUANTILES = {"p50_ms": 50, "p95_ms": 95, "p99_ms": 99}
"""Reported quantiles, as percentages (whole numbers, so ranks are exact integers)."""
SECOND = 1_000_000_000
_MS = 1_000_000

_SHARED = [
    ("kind", pa.string()), ("run", pa.string()), ("f", pa.string()),
    ("outcome", pa.string()), ("cluster", pa.string()), ("second", pa.int64()),
    ("interval", pa.int64()), ("count", pa.int64()), ("end", pa.int64())]
_PARTS = pa.schema([*_SHARED, ("latency_ms", pa.float64())])
"""A partial aggregate (`kind`): `count` (operations by outcome) and `observed` (other
events by type; `outcome` holds the type) with no second; `throughput` by second of
completion; `latency`, one summary entry (`count` is its weight) by second of invocation;
`interval` (client operations invoked in fault interval `interval`, by outcome) and
`recovery` (`end`: the earliest completion of an acknowledged send at or after its end);
`failover-acks` (`count`: acks before a judged failover, per run)."""
FIGURES = pa.schema([*_SHARED, *(pa.field(name, pa.float64()) for name in QUANTILES),
                     ("max_ms", pa.float64())])
"""A merged figure: `count` (`outcome` null is pending; an observation's `count` is null
unless it is a delivered event, so only its `end` counts), `throughput`, `latency`,
`interval`, `recovery` and `failover-acks`."""
_LATENCY_GROUP = ["run", "f", "second"]

INTERVALS = pa.schema([("run", pa.string()), ("interval", pa.int64()), ("start", pa.int64()),
                       ("end", pa.int64())])
"""Fault intervals, numbered; a null `end` never healed (it lasts to the history's end)."""


def aggregates(frames: HistoryFrames, intervals: pa.Table,
               failovers: pa.Table) -> list[dict[str, Any]]:
    """Every run's figures (`FIGURES`), as the driver's rows: with the fault `intervals`
    (`INTERVALS`) and the judged `failovers` (`HistoryFrames.failover_table`)."""
    parts = scatter_scans(frames.spark, frames.scans(),
                          lambda scan: _partial(scan, intervals, failovers), "second",
                          frames.partitions)
    merged = decide(gather([parts], frames.partitions), _merge, FIGURES)
    result: list[dict[str, Any]] = merged.toArrow().to_pylist()
    return result


def _partial(scan: Scan, intervals: pa.Table, failovers: pa.Table) -> pa.Table:
    """A map task's partial aggregates."""
    if scan.file == OBSERVATIONS_FILE:
        events = scan.read(["run", "f", "type", "time"])
        observed = events.group_by(["run", "f", "type"]).aggregate(
            [([], "count_all"), ("time", "max")])
        return rows(_PARTS, observed.num_rows, kind="observed", run=observed["run"],
                    f=observed["f"], outcome=observed["type"], count=observed["count_all"],
                    end=observed["time_max"])
    ops = scan.read(list(dict.fromkeys(["run", "f", "process", "done_type", "cluster", "time",
                                        "done_time", *ACKS.reads(_ACK_NAMES)])))
    ops = ops.append_column("end", pc.max_element_wise(ops["time"], ops["done_time"]))
    counts = ops.group_by(["run", "f", "done_type"]).aggregate(
        [([], "count_all"), ("end", "max")])
    client = pc.and_(pc.invert(pc.is_in(ops["process"], pa.array(NOT_CLIENTS))),
                     pc.is_valid(ops["process"]))
    # Filtering copies every column it keeps: only the ones each use reads are kept.
    completed = ops.select(["run", "f", "cluster", "done_type", "time", "done_time"]).filter(
        pc.and_(client, pc.is_valid(ops["done_time"])))
    completed = completed.append_column("done_second", pc.divide(completed["done_time"], SECOND))
    throughput = completed.group_by(["run", "f", "cluster", "done_type", "done_second"]).aggregate(
        [([], "count_all")])
    latency = _summaries(pa.table({
        "run": completed["run"], "f": completed["f"],
        "second": pc.divide(completed["time"], SECOND),
        "latency_ns": pc.subtract(completed["done_time"], completed["time"])}))
    # A task reads one run's file: only that run's intervals concern it.
    mine = intervals.filter(pc.equal(intervals["run"], scan.run))
    return pa.concat_tables([
        rows(_PARTS, counts.num_rows, kind="count", run=counts["run"], f=counts["f"],
             outcome=counts["done_type"], count=counts["count_all"], end=counts["end_max"]),
        rows(_PARTS, throughput.num_rows, kind="throughput", run=throughput["run"],
             f=throughput["f"], outcome=throughput["done_type"], cluster=throughput["cluster"],
             second=throughput["done_second"], count=throughput["count_all"]),
        rows(_PARTS, latency.num_rows, kind="latency", **columns(latency)),
        _in_intervals(scan.run, ops.select(["time", "done_type"]).filter(client), mine),
        _recoveries(scan.run, ops.select(["f", "done_type", "done_time"]), mine),
        _failover_acks(ops, failovers)])


def _in_intervals(run: str, ops: pa.Table, intervals: pa.Table) -> pa.Table:
    """Per fault interval of the run, its client operations (invoked in it) by outcome.
    Sorted by invoke time, an interval's operations are one stretch of the task's, and a
    running count per outcome gives each stretch's counts."""
    if not intervals.num_rows or not ops.num_rows:
        return _PARTS.empty_table()
    times = ops["time"].to_numpy()
    order = np.argsort(times, kind="stable")
    outcomes = pc.dictionary_encode(ops["done_type"].combine_chunks(), null_encoding="encode")
    codes = outcomes.indices.to_numpy(zero_copy_only=False)[order]
    times = times[order]
    first = np.searchsorted(times, intervals["start"].to_numpy(), "left")
    ends = pc.fill_null(intervals["end"], np.iinfo(np.int64).max).to_numpy()
    last = np.searchsorted(times, ends, "right")
    numbers = intervals["interval"].to_numpy()
    found = []
    for code, outcome in enumerate(outcomes.dictionary.to_pylist()):
        running = np.r_[0, np.cumsum(codes == code)]
        inside = running[last] - running[first]
        some = inside > 0
        found.append(rows(_PARTS, int(some.sum()), kind="interval", run=run,
                          interval=pa.array(numbers[some]),
                          outcome=pa.array([outcome] * int(some.sum()), pa.string()),
                          count=pa.array(inside[some])))
    return pa.concat_tables(found)


def _recoveries(run: str, ops: pa.Table, intervals: pa.Table) -> pa.Table:
    """Per healed fault interval of the run, the task's earliest completion of an
    acknowledged send at or after the interval's end."""
    healed = intervals.filter(pc.is_valid(intervals["end"]))
    sends = ops.filter(pc.and_(pc.equal(ops["f"], "send"), pc.equal(ops["done_type"], "ok")))
    if not healed.num_rows or not sends.num_rows:
        return _PARTS.empty_table()
    done = np.sort(sends["done_time"].to_numpy())
    at = np.searchsorted(done, healed["end"].to_numpy(), "left")
    some = at < len(done)
    return rows(_PARTS, int(some.sum()), kind="recovery", run=run,
                interval=pa.array(healed["interval"].to_numpy()[some]),
                end=pa.array(done[at[some]]))


_ACK_NAMES = ["run", "topic", "subscription", "cluster", "ack_index"]


def _failover_acks(ops: pa.Table, failovers: pa.Table) -> pa.Table:
    """Per run, the task's acks completed `ok` that a judged failover's duplicates were
    measured against: of a failed-over subscription (of the failover's topic, when it
    names one) in the cluster it left, before the failover."""
    if not failovers.num_rows:
        return _PARTS.empty_table()
    acks = ACKS.table(ops, _ACK_NAMES)
    pairs = acks.join(failovers.select(["run", "subscription", "from_cluster", "topic",
                                        "failover_index"]),
                      ["run", "subscription", "cluster"], ["run", "subscription", "from_cluster"],
                      join_type="inner", right_suffix="_failover")
    pairs = pairs.filter(pc.and_(
        pc.or_(pc.is_null(pairs["topic_failover"]),
               pc.fill_null(pc.equal(pairs["topic"], pairs["topic_failover"]), False)),
        pc.less(pairs["ack_index"], pairs["failover_index"])))
    # An ack before several failovers counts once.
    judged = pairs.group_by(["run", "ack_index"]).aggregate([]).group_by("run").aggregate(
        [([], "count_all")])
    return rows(_PARTS, judged.num_rows, kind="failover-acks", run=judged["run"],
                count=judged["count_all"])


def _summaries(latencies: pa.Table) -> pa.Table:
    """Each group's rank summary (see the module) of its `latency_ns`: entries
    `latency_ms` with weight `count`, every group's largest latency among them. Sorted as
    whole nanoseconds, which pack with the group into one integer key."""
    ordered, starts, sizes = _grouped(latencies, "latency_ns")
    group = np.repeat(np.arange(len(starts)), sizes)
    position = np.arange(ordered.num_rows) - starts[group]
    stride = -(-sizes // SUMMARY_SIZE)
    kept = np.flatnonzero(((position + 1) % stride[group] == 0)
                          | (position == sizes[group] - 1))
    covered = position[kept] + 1  # values of its group up to and including the entry
    weight = covered.copy()
    same = group[kept][1:] == group[kept][:-1]
    weight[1:][same] -= covered[:-1][same]
    entries = ordered.take(pa.array(kept, pa.int64()))
    latency_ms = pc.divide(entries["latency_ns"].cast(pa.float64()), _MS)
    return entries.drop_columns(["latency_ns"]).append_column(
        "latency_ms", latency_ms).append_column("count", pa.array(weight))


def _merge(parts: pa.Table) -> pa.Table:
    """One partition's partial aggregates, merged into figures."""
    def of(kind: str) -> pa.Table:
        return parts.filter(pc.equal(parts["kind"], kind))

    counts = of("count").group_by(["run", "f", "outcome"]).aggregate(
        [("count", "sum"), ("end", "max")])
    observed = of("observed").group_by(["run", "f", "outcome"]).aggregate(
        [("count", "sum"), ("end", "max")])
    # Another event's type says only when the history last moved; `ok` ones are counted.
    ok = pc.equal(observed["outcome"], "ok")
    delivered = pc.and_(pc.is_in(observed["f"], pa.array(sorted(OBSERVATIONS))), ok)
    throughput = of("throughput").group_by(["run", "f", "cluster", "outcome", "second"]).aggregate(
        [("count", "sum")])
    latency = _quantiles(of("latency"))
    in_intervals = of("interval").group_by(["run", "interval", "outcome"]).aggregate(
        [("count", "sum")])
    recoveries = of("recovery").group_by(["run", "interval"]).aggregate([("end", "min")])
    failover_acks = of("failover-acks").group_by("run").aggregate([("count", "sum")])
    return pa.concat_tables([
        rows(FIGURES, in_intervals.num_rows, kind="interval", **columns(in_intervals),
             count=in_intervals["count_sum"]),
        rows(FIGURES, recoveries.num_rows, kind="recovery", **columns(recoveries),
             end=recoveries["end_min"]),
        rows(FIGURES, failover_acks.num_rows, kind="failover-acks", run=failover_acks["run"],
             count=failover_acks["count_sum"]),
        rows(FIGURES, counts.num_rows, kind="count", run=counts["run"], f=counts["f"],
             outcome=counts["outcome"], count=counts["count_sum"], end=counts["end_max"]),
        rows(FIGURES, observed.num_rows, kind="count", run=observed["run"], f=observed["f"],
             outcome=pc.if_else(ok, "ok", pa.scalar(None, pa.string())),
             count=pc.if_else(delivered, observed["count_sum"], pa.scalar(None, pa.int64())),
             end=observed["end_max"]),
        rows(FIGURES, throughput.num_rows, kind="throughput", **columns(throughput),
             count=throughput["count_sum"]),
        rows(FIGURES, latency.num_rows, kind="latency", **columns(latency))])


def _quantiles(entries: pa.Table) -> pa.Table:
    """Per group, its count, `QUANTILES` and maximum from the merged summaries: the
    quantile q is the smallest entry whose cumulative weight reaches ceil(q * count)."""
    ordered, starts, sizes = _grouped(entries, "latency_ms")
    weights = ordered["count"].to_numpy()
    cumulative = np.cumsum(weights)
    before = np.r_[0, cumulative][starts]
    ends = starts + sizes - 1
    counts = cumulative[ends] - before
    values = ordered["latency_ms"].to_numpy()
    first = ordered.take(pa.array(starts, pa.int64())).select(_LATENCY_GROUP)
    figures = {name: values[np.searchsorted(cumulative, before + (percent * counts + 99) // 100)]
               for name, percent in QUANTILES.items()}
    return pa.table({**columns(first), "count": counts, **figures, "max_ms": values[ends]})


def _grouped(table: pa.Table, value: str) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """The table sorted by latency group then `value`, with each group's first row and
    size. Sorted in numpy, on each group column's rank: Arrow's sort on text keys took
    most of a map task's time here."""
    if not table.num_rows:
        return table, np.zeros(0, np.int64), np.zeros(0, np.int64)
    group = np.zeros(table.num_rows, np.int64)
    for name in _LATENCY_GROUP:
        rank = _ranks(table[name])
        group = group * np.int64(rank.max() + 1) + rank
    order = _order(group, table[value].to_numpy())
    group = group[order]
    starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
    return table.take(pa.array(order)), starts, np.diff(np.r_[starts, table.num_rows])


def _order(group: npt.NDArray[np.int64], values: np.ndarray) -> npt.NDArray[np.intp]:
    """The rows in order of group, then value. Integer values whose range fits beside the
    group in one 63-bit key take one sort of that key, several times faster than sorting
    on two keys; rows equal in both are alike to every caller."""
    if values.dtype.kind == "i":
        low = int(values.min())
        width = (int(values.max()) - low).bit_length()
        if int(group.max()).bit_length() + width < 63:
            return np.argsort((group << np.int64(width)) | (values - np.int64(low)))
    return np.lexsort((values, group))


def _ranks(column: pa.ChunkedArray) -> npt.NDArray[np.int64]:
    """Each row's rank in the column's order, null last (as Arrow sorts them): an
    integer's distance from the least; text's rank among its distinct values."""
    if pa.types.is_integer(column.type) and not column.null_count:
        values: npt.NDArray[np.int64] = column.to_numpy().astype(np.int64)
        distance: npt.NDArray[np.int64] = values - values.min()
        return distance
    encoded = pc.dictionary_encode(column.combine_chunks(), null_encoding="encode")
    rank_of_code = np.empty(len(encoded.dictionary), np.int64)
    rank_of_code[pc.array_sort_indices(encoded.dictionary,
                                       null_placement="at_end").to_numpy()] = np.arange(
        len(encoded.dictionary))
    ranked: npt.NDArray[np.int64] = rank_of_code[encoded.indices.to_numpy()]
    return ranked
