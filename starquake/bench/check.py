"""`starquake bench check`: the full checker set over a synthetic history with anomalies of
known counts, timed, counts verified; and DuckDB doing the lost and duplicate checks on
the same file in the same run, as the single-machine yardstick.

The DuckDB queries cover only what the synthetic history exercises (individual acks, one
cluster, no failovers): they are a yardstick for speed, not a second implementation.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import resource
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
import pyarrow.parquet as pq

from checkers.spark_settings import SparkSettings, spark_options
from checkers.synthetic import INJECTABLE, SyntheticSpec, write_parquet

if TYPE_CHECKING:  # pyspark is imported by the command's body, so --help stays fast
    from pyspark.sql import SparkSession

    from checkers.check import RunResult

_EVENTS_PER_MESSAGE = 5
INJECTED_EACH = 10

_DUCKDB_OPS = """
CREATE TEMP VIEW ev AS SELECT * FROM read_parquet('{path}');
CREATE TEMP VIEW ops AS
  SELECT *, lead(type) OVER w AS done_type, lead("index") OVER w AS done_index
  FROM ev WHERE NOT (f IN ('recv', 'layout', 'meta', 'cursor') AND type = 'ok')
  WINDOW w AS (PARTITION BY process ORDER BY "index");
"""
_DUCKDB_LOST = """
WITH sends AS (SELECT topic, value, "index" AS inv_index FROM ops
               WHERE f = 'send' AND type = 'invoke' AND done_type = 'ok'),
     subs AS (SELECT topic, coalesce(subscription, value) AS sub, min(done_index) AS since
              FROM ops WHERE f = 'subscribe' AND type = 'invoke' AND done_type = 'ok'
              GROUP BY ALL),
     recvs AS (SELECT DISTINCT topic, subscription, value FROM ev
               WHERE f = 'recv' AND type = 'ok')
SELECT count(*) FROM sends JOIN subs USING (topic)
WHERE since < inv_index AND NOT EXISTS (
  SELECT 1 FROM recvs r WHERE r.topic = sends.topic AND r.subscription = subs.sub
                          AND r.value = sends.value)
"""
_DUCKDB_DUPLICATE = """
WITH acks AS (SELECT topic, subscription, cluster, value, position,
                     min(done_index) AS ack_index
              FROM ops WHERE f = 'ack' AND type = 'invoke' AND done_type = 'ok' GROUP BY ALL)
SELECT count(DISTINCT r."index") FROM ev r JOIN acks a USING (topic, subscription, cluster, value)
WHERE r.f = 'recv' AND r.type = 'ok' AND r."index" > a.ack_index
  AND (a.position IS NULL OR r.position IS NULL OR a.position = r.position)
"""


def duckdb_lost_and_duplicate(path: Path) -> tuple[int, int, float]:
    import duckdb

    start = time.perf_counter()
    with duckdb.connect() as db:
        db.execute(_DUCKDB_OPS.format(path=path))
        lost, duplicate = (_one_number(db.execute(query).fetchone())
                           for query in (_DUCKDB_LOST, _DUCKDB_DUPLICATE))
    return lost, duplicate, time.perf_counter() - start


def _one_number(row: tuple[Any, ...] | None) -> int:
    assert row is not None, "an aggregate query answers one row"
    return int(row[0])


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


@click.command()
@click.option("--events", default=2_000_000, show_default=True,
              help="About how many events the synthetic history has.")
@spark_options
@click.option("--keep", type=click.Path(path_type=Path, file_okay=False),
              help="Keep the history in this directory, or reuse the one kept there.")
@click.option("--docker-spark-workers", type=click.IntRange(min=1),
              help="Check on a Spark cluster of containers started for the bench: a master "
                   "and this many one-core workers, the history's directory shared "
                   "(docs/spark-cluster.md); overrides the --spark-* options.")
def bench_check(events: int, spark: SparkSettings, keep: Path | None,
                docker_spark_workers: int | None) -> None:
    """Time every checker over EVENTS synthetic events and verify the counts found."""
    inject = dict.fromkeys(INJECTABLE, INJECTED_EACH)
    spec = SyntheticSpec(messages=max(events // _EVENTS_PER_MESSAGE, 2000), seed=7,
                         inject=inject)
    with tempfile.TemporaryDirectory() as tmp:
        # Named by its size: the spec is otherwise fixed, so a kept file of that name is
        # this very history, and paired runs of the check alone can reuse it.
        path = (keep or Path(tmp)) / f"history-{spec.messages}-messages.parquet"
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
                    written = pool.apply(write_parquet, (spec, path))
                except ValueError as exc:  # the injections do not fit in so few messages
                    raise click.BadParameter(str(exc), param_hint="--events") from None
            click.echo(f"generated {written:,} events in {time.perf_counter() - started:.1f} s")

        with _cluster(spark, docker_spark_workers, path.parent) as where:
            timed = _timed_check(where, path)
        # Before DuckDB runs in this process, so the figure is the check's own.
        python_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

        counts = {k: c["count"] for k, c in timed.result.results["checkers"].items()}
        expected = {k: inject.get(k, 0) for k in counts}
        lost, duplicate, duck_s = duckdb_lost_and_duplicate(path)

    check_s = timed.check_s
    click.echo(f"spark ({timed.master}): session start {timed.session_s:.1f} s, all checkers "
               f"{check_s:.1f} s ({written / check_s:,.0f} events/s; of which validating and "
               f"pairing {timed.prepare_s:.1f} s; driver JVM CPU {timed.cpu_s:.1f} s); driver "
               f"JVM peak {timed.jvm_mib or float('nan'):.0f} MiB, driver Python peak "
               f"{python_mib:.0f} MiB, local Python workers' peaks summed "
               f"{timed.workers_mib:.0f} MiB")
    click.echo(f"duckdb: lost and duplicate only {duck_s:.1f} s "
               f"(lost={lost}, duplicate={duplicate}); spark/duckdb = {check_s / duck_s:.1f}")
    click.echo("counts " + ("verified" if counts == expected else f"WRONG: {counts} "
                            f"expected {expected}"))
    if counts != expected or (lost, duplicate) != (inject["lost"], inject["duplicate"]):
        raise click.ClickException("counts differ from what was injected")
