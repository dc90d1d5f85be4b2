"""`starquake bench check`: the full checker set over a synthetic history with anomalies of
known counts, timed, counts verified; and DuckDB doing the same checks on the same file in
the same run (`starquake.bench.duckdb_checks`), as the single-machine yardstick.
"""

from __future__ import annotations

import dataclasses
import functools
import multiprocessing
import resource
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import pyarrow.parquet as pq

from checkers.mixes import MIXES, scaled
from checkers.mixes import write_parquet as write_mix
from checkers.spark_settings import SparkSettings, own_spark_options
from checkers.synthetic import INJECTABLE, SyntheticSpec, write_parquet
from history.errors import BadInput
from starquake.bench.check_from_run import real_run
from starquake.bench.duckdb_checks import duckdb_counts

if TYPE_CHECKING:  # pyspark is imported by the command's body, so --help stays fast
    from pyspark.sql import SparkSession

    from checkers.check import RunResult

_EVENTS_PER_MESSAGE = 5
INJECTED_EACH = 10

def _process_handle(spark: SparkSession) -> Any:
    """The driver JVM's `java.lang.ProcessHandle`, through py4j."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None, "a live SparkContext has its JVM"
    return jvm.java.lang.ProcessHandle.current()


def _jvm_cpu_s(spark: SparkSession) -> float:
    """CPU seconds the driver JVM (local mode: every executor thread too) has used: steadier
    than wall time on a shared machine."""
    info = _process_handle(spark).info()
    return float(info.totalCpuDuration().get().toNanos()) / 1e9


def _peak_rss_mib(pid: int) -> float | None:
    """A process's peak resident memory (VmHWM), where /proc can tell."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _jvm_pid(spark: SparkSession) -> int:
    return int(_process_handle(spark).pid())


def _python_workers_peak_mib(spark: SparkSession) -> float:
    """The summed peaks of the JVM's Python workers (the checkers' per-partition passes
    run there, outside the driver), read while they still live."""
    handles = _process_handle(spark).descendants()
    return sum(_peak_rss_mib(pid) or 0.0 for pid in
               [handle.pid() for handle in handles.toArray()])


@dataclass(frozen=True)
class _TimedCheck:
    master: str
    result: RunResult
    session_s: float
    prepare_s: float
    check_s: float
    """Validating and pairing, staging on a cluster, every checker and the statistics."""
    cpu_s: float
    jvm_mib: float | None
    workers_mib: float


@contextmanager
def _cluster(spark: SparkSettings, workers: int | None, shared_dir: Path
             ) -> Iterator[SparkSettings]:
    """`spark` as given, or a containerised cluster of `workers` sharing `shared_dir`."""
    if workers is None:
        yield spark
        return
    from harness.targets.docker.engine import connect
    from harness.targets.docker.images import node_image
    from harness.targets.docker.spark_cluster import spark_cluster

    client = connect()
    with spark_cluster(client, node_image(client, "import"), workers, shared_dir) as cluster:
        yield dataclasses.replace(spark, master=cluster.master_url,
                                  driver_host=cluster.driver_host, python=cluster.python,
                                  shared_dir=shared_dir)


def _timed_check(spark: SparkSettings, path: Path) -> _TimedCheck:
    from checkers.anomaly import CheckSettings
    from checkers.check import check_runs
    from checkers.load import prepare
    from checkers.session import spark_session
    from checkers.staging import staged

    started = time.perf_counter()
    session = spark_session(spark)
    session_s = time.perf_counter() - started
    started = time.perf_counter()
    cpu_before = _jvm_cpu_s(session)
    prepared = prepare(path)
    prepare_s = time.perf_counter() - started
    with staged({"bench": prepared}, spark.shared_dir) as readable:
        (result,) = check_runs(session, readable, CheckSettings())
    check_s = time.perf_counter() - started
    timed = _TimedCheck(spark.master, result, session_s, prepare_s, check_s,
                        _jvm_cpu_s(session) - cpu_before, _peak_rss_mib(_jvm_pid(session)),
                        _python_workers_peak_mib(session))
    session.stop()
    return timed


SIMPLE = "simple"
"""The first generator's history (`checkers.synthetic`): one consumer, each message's
events together, no faults; kept so that figures measured on it can be compared."""


def _writer(mix: str, events: int, inject: dict[str, int], path: Path) -> Callable[[], int]:
    """What writes the mix's history of about `events` events to `path` (picklable, so a
    child process can run it)."""
    if mix == SIMPLE:
        spec = SyntheticSpec(messages=max(events // _EVENTS_PER_MESSAGE, 2000), seed=7,
                             inject=inject)
        return functools.partial(write_parquet, spec, path)
    return functools.partial(write_mix, scaled(MIXES[mix], events), inject, path)


def _history_name(source: str, events: int, anomalies: int) -> str:
    """The history's file name, by what it is: its source, size and (but for the default,
    so that files kept before there was a choice keep their names) anomalies of each kind."""
    injected = "" if anomalies == INJECTED_EACH else f"-{anomalies}-anomalies"
    return f"history-{source}-{events}-events{injected}.parquet"


@click.command()
@click.option("--events", default=2_000_000, show_default=True,
              help="About how many events the synthetic history has.")
@click.option("--mix", type=click.Choice([*MIXES, SIMPLE]), default="default",
              show_default=True,
              help="What the history is like (checkers/mixes/): a long faulted run, the "
                   "same with many keys, or with heavy redelivery; `untuned`: 200 producers, "
                   "keys of 100 bytes and values of 200, half of the acks of `audit` "
                   "cumulative (`live` is key_shared, where Pulsar refuses cumulative acks); "
                   "or the first, simple generator's history.")
@click.option("--anomalies", default=INJECTED_EACH, show_default=True,
              type=click.IntRange(min=0),
              help="How many units of each injectable anomaly to inject (thousands want "
                   "millions of events, and a mix of many keys, as `untuned`: each unit has "
                   "a key of its own).")
@click.option("--from-run", type=click.Path(exists=True, path_type=Path),
              help="Instead of a mix, a real run's history (its directory or history "
                   "file), written in as many copies as make --events; the counts must be "
                   "the copies' number times what the checkers and DuckDB find in the run.")
@own_spark_options
@click.option("--keep", type=click.Path(path_type=Path, file_okay=False),
              help="Keep the history in this directory, or reuse the one kept there.")
@click.option("--docker-spark-workers", type=click.IntRange(min=1),
              help="Check on a Spark cluster of containers started for the bench: a master "
                   "and this many one-core workers, the history's directory shared "
                   "(docs/spark-cluster.md); overrides the --spark-* options.")
@click.option("--end-to-end", is_flag=True,
              help="Instead, time `starquake check FILE` from process start to verdict on "
                   "the example history and on this one: cold (a Spark of its own), first "
                   "and warm through a resident server of the bench's own, beside DuckDB "
                   "answering the four core questions; medians of --repeats.")
@click.option("--repeats", default=3, show_default=True, type=click.IntRange(min=1),
              help="How many times --end-to-end times each figure.")
def bench_check(events: int, mix: str, anomalies: int, from_run: Path | None,
                spark: SparkSettings, keep: Path | None, docker_spark_workers: int | None,
                end_to_end: bool, repeats: int) -> None:
    """Time every checker over EVENTS synthetic events of a MIX (or copies of a real
    run) and verify the counts found, by the checkers and by DuckDB."""
    if spark.remote is not None and not end_to_end:
        # The bench reads the driver JVM's CPU time and memory, which only a Spark of its
        # own lets it see (docs/performance.md shows how to time a remote check).
        raise BadInput(f"bench check: --spark-remote {spark.remote}: the bench times a "
                       "Spark of its own; time `starquake check --spark-remote` instead")
    if from_run is not None and mix != "default":
        raise click.UsageError("--from-run and --mix exclude each other")
    if from_run is not None and anomalies != INJECTED_EACH:
        raise click.UsageError("--from-run and --anomalies exclude each other")
    inject = dict.fromkeys(INJECTABLE, anomalies)
    with tempfile.TemporaryDirectory() as tmp:
        real = None if from_run is None else real_run(from_run, events, spark, Path(tmp))
        wanted, duck_wanted = (inject, inject) if real is None else (real.expected,
                                                                     real.duckdb_expected)
        # Named by mix (or run), size and anomalies: the specs are otherwise fixed, so a
        # kept file of that name is this very history, and paired runs of the check alone
        # can reuse it.
        source = mix if real is None else real.name
        path = (keep or Path(tmp)) / _history_name(source, events, anomalies)
        if path.is_file():
            written = pq.ParquetFile(path).metadata.num_rows
            click.echo(f"reusing {written:,} events in {path} (and their pairing, "
                       "when kept beside it)")
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            started = time.perf_counter()
            # In a child process, so the driver's peak memory below is the check's alone.
            with multiprocessing.get_context("spawn").Pool(1) as pool:
                try:
                    written = pool.apply(_writer(mix, events, inject, path) if real is None
                                         else real.writer(path))
                except ValueError as exc:  # the injections do not fit in so few messages
                    raise click.BadParameter(str(exc),
                                             param_hint="--events or --anomalies") from None
            click.echo(f"generated {written:,} events in {time.perf_counter() - started:.1f} s")

        if end_to_end:
            _end_to_end(path, written, wanted, duck_wanted, inject if real is None else None,
                        Path(tmp), spark.driver_memory, repeats)
            return
        with _cluster(spark, docker_spark_workers, path.parent) as where:
            timed = _timed_check(where, path)
        # Before DuckDB runs in this process, so the figure is the check's own.
        python_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

        counts = {k: c["count"] for k, c in timed.result.results["checkers"].items()}
        expected = {k: wanted.get(k, 0) for k in counts}
        duck = duckdb_counts(path)

    check_s = timed.check_s
    click.echo(f"spark ({timed.master}): session start {timed.session_s:.1f} s, all checkers "
               f"{check_s:.1f} s ({written / check_s:,.0f} events/s; of which validating and "
               f"pairing {timed.prepare_s:.1f} s; driver JVM CPU {timed.cpu_s:.1f} s); driver "
               f"JVM peak {timed.jvm_mib or float('nan'):.0f} MiB, driver Python peak "
               f"{python_mib:.0f} MiB, local Python workers' peaks summed "
               f"{timed.workers_mib:.0f} MiB")
    click.echo(f"duckdb: {len(duck.counts)} checks ({', '.join(duck.counts)}) "
               f"{duck.seconds:.1f} s; spark/duckdb = {check_s / duck.seconds:.1f}")
    # A check the history asks nobody to judge (`unavailable` without a bound) is absent
    # from the checkers' results, and DuckDB's query of it must find nothing.
    duck_expected = {k: duck_wanted.get(k, 0) for k in duck.counts}
    click.echo("counts " + ("verified" if counts == expected and duck.counts == duck_expected
                            else f"WRONG: spark {counts}, duckdb {duck.counts}, "
                                 f"expected {expected}"))
    if counts != expected or duck.counts != duck_expected:
        raise click.ClickException("counts differ from what was injected")


def _end_to_end(path: Path, events: int, expected: dict[str, int],
                duckdb_expected: dict[str, int], plain_expected: dict[str, int] | None,
                work: Path, driver_memory: str, repeats: int) -> None:
    """`--end-to-end`: the small example history, then the large one (module check_e2e)."""
    from starquake.bench.check_e2e import end_to_end, print_timings, small_history

    small = small_history(work)
    small_events = sum(1 for _ in small.open())
    print_timings("small", small_events,
                  end_to_end(small, None, work, driver_memory, repeats))
    print_timings("large", events, end_to_end(path, expected, work, driver_memory, repeats,
                                              duckdb_expected, plain_expected))
