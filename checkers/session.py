"""The SparkSession the checkers run in: local by default, any Spark master by configuration
(`checkers.spark_settings`; docs/spark-cluster.md for a cluster of other machines)."""

from __future__ import annotations

import importlib
import os
import socket
import sys
import zipfile
from pathlib import Path
from urllib.parse import urlsplit

from pyspark import SparkFiles
from pyspark.sql import SparkSession

from checkers.spark_settings import SparkSettings

_LOG_CONFIG = Path(__file__).with_name("log4j2.properties")
LOOPBACK = "127.0.0.1"
SHIPPED_PACKAGES = ("checkers", "history")
"""What the executors' Python workers import from this project: shipped to them as a zip,
so a worker needs only an interpreter with the project's dependencies."""


def route_address(master: str) -> str | None:
    """This machine's address on the route to a spark:// master (the first of an HA list),
    which the master's workers can normally reach too; None for other masters, which
    leaves Spark's own choice (the host name). A UDP `connect` only picks the route: no
    packet is sent."""
    if not master.startswith("spark://"):
        return None
    first = urlsplit(master.split(",")[0])
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect((first.hostname or "", first.port or 7077))
        address: str = probe.getsockname()[0]
    return address


def spark_session(settings: SparkSettings, *,
                  shuffle_partitions: int | None = None) -> SparkSession:
    """A session tuned for histories: Arrow on, few shuffle partitions on small machines
    (the default 200 costs more in task overhead than our joins do), quiet logs.

    A local master keeps all of Spark's traffic on loopback and runs this very interpreter
    in its Python workers. For a cluster the driver listens on an address the workers
    reach, and the workers receive this project's code from the driver.
    """
    driver_host = settings.driver_host or (LOOPBACK if settings.local
                                           else route_address(settings.master))
    # The driver decides which interpreter every executor starts (PySpark sends the path
    # with each function, and a worker's own PYSPARK_PYTHON is not consulted), so this is
    # the one knob for the workers' Python.
    os.environ["PYSPARK_PYTHON"] = (settings.python or os.environ.get("PYSPARK_PYTHON")
                                    or sys.executable)
    if driver_host is not None:
        os.environ["SPARK_LOCAL_IP"] = driver_host
    cores = os.cpu_count() or 2
    builder = (
        SparkSession.builder.master(settings.master)
        .appName("starquake-check")
        .config("spark.driver.memory", settings.driver_memory)
        # The throughput collector: a check is a batch job that pauses cost nothing; at 20M
        # events it took 5 to 17% less wall and CPU time than G1. And only the quick JIT
        # compiler (C1): the JVM only plans and moves the Python workers' payloads, and
        # the optimising compiler spent half its CPU compiling the code that does it, 26
        # s of a 20M-event check, to make the tasks about 1 s faster (docs/performance.md).
        .config("spark.driver.extraJavaOptions",
                f"-Dlog4j2.configurationFile={_LOG_CONFIG} -XX:+UseParallelGC "
                "-XX:TieredStopAtLevel=1")
        .config("spark.sql.shuffle.partitions", str(shuffle_partitions or max(4, 2 * cores)))
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        # The Python workers allocate with the C library's malloc, not Arrow's default
        # (mimalloc): their joins and group-bys of whole partitions took about 12% less
        # CPU with it (docs/performance.md).
        .config("spark.executorEnv.ARROW_DEFAULT_MEMORY_POOL", "system")
        # The finders' Python workers take whole partitions: fewer, larger batches.
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100000")
        .config("spark.sql.adaptive.enabled", "true")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    if driver_host is not None:
        builder = (builder.config("spark.driver.host", driver_host)
                   .config("spark.driver.bindAddress", driver_host))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    if not settings.local:
        session.sparkContext.addPyFile(str(_project_zip()))
    return session


def _project_zip() -> Path:
    """SHIPPED_PACKAGES as this process imports them, zipped into the driver's Spark file
    directory (removed with the session)."""
    target = Path(SparkFiles.getRootDirectory()) / "starquake-checkers.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for package in SHIPPED_PACKAGES:
            root = Path(importlib.import_module(package).__file__ or "").parent
            for source in sorted(root.rglob("*.py")):
                archive.write(source, source.relative_to(root.parent).as_posix())
    return target
