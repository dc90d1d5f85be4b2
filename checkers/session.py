"""The SparkSession the checkers run in: local by default, any Spark master by configuration."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

MASTER_ENV = "STARQUAKE_SPARK_MASTER"
_LOG_CONFIG = Path(__file__).with_name("log4j2.properties")
DEFAULT_MASTER = "local[*]"


def spark_master(flag: str | None) -> str:
    """The master URL: the flag, else $STARQUAKE_SPARK_MASTER, else local[*]."""
    return flag or os.environ.get(MASTER_ENV) or DEFAULT_MASTER


def spark_session(master: str, *, driver_memory: str = "3g",
                  shuffle_partitions: int | None = None) -> SparkSession:
    """A session tuned for histories: Arrow on, few shuffle partitions on small machines
    (the default 200 costs more in task overhead than our joins do), quiet logs.

    Executors run this Python (`sys.executable`), so a standalone cluster on the same
    machine finds pyspark and our packages without any extra set-up.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # Keep Spark's own traffic on loopback whatever the host's interfaces are.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    cores = os.cpu_count() or 2
    builder = (
        SparkSession.builder.master(master)
        .appName("starquake-check")
        .config("spark.driver.memory", driver_memory)
        # The throughput collector: a check is a batch job that pauses cost nothing; at 20M
        # events it took 5 to 17% less wall and CPU time than G1 (docs/performance.md).
        .config("spark.driver.extraJavaOptions",
                f"-Dlog4j2.configurationFile={_LOG_CONFIG} -XX:+UseParallelGC")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions or max(4, 2 * cores)))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        # The finders' Python workers take whole partitions: fewer, larger batches.
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100000")
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
    )
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
