"""The SparkSession the checkers run in: local by default, any Spark master by configuration
(`checkers.spark_settings`; docs/spark-cluster.md for a cluster of other machines)."""

from __future__ import annotations

import atexit
import functools
import importlib
import os
import socket
import sys
import tempfile
import uuid
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import ParamSpec, TypeVar
from urllib.parse import urlsplit

from pyspark import SparkFiles
from pyspark.sql import SparkSession

from checkers.spark_settings import RESIDENT, SparkSettings

_LOG_CONFIG = Path(__file__).with_name("log4j2.properties")
LOOPBACK = "127.0.0.1"
P = ParamSpec("P")
R = TypeVar("R")
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
    reach, and the workers receive this project's code from the driver. With a remote
    (`--spark-remote`) this process is only a Spark Connect client, and the server runs
    the jobs (docs/spark-resident.md).
    """
    runtime = _runtime_config(shuffle_partitions)
    if settings.remote is not None:
        return _connect_session(settings, runtime)
    driver_host = settings.driver_host or (LOOPBACK if settings.local
                                           else route_address(settings.master))
    # The driver decides which interpreter every executor starts (PySpark sends the path
    # with each function, and a worker's own PYSPARK_PYTHON is not consulted), so this is
    # the one knob for the workers' Python.
    os.environ["PYSPARK_PYTHON"] = (settings.python or os.environ.get("PYSPARK_PYTHON")
                                    or sys.executable)
    if driver_host is not None:
        os.environ["SPARK_LOCAL_IP"] = driver_host
    builder = SparkSession.builder.master(settings.master).appName("starquake-check")
    for key, value in {**driver_config(settings.driver_memory, driver_host),
                       **runtime}.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    if not settings.local:
        session.sparkContext.addPyFile(
            str(_project_zip(Path(SparkFiles.getRootDirectory()))))
    return session


def driver_config(driver_memory: str, driver_host: str | None) -> dict[str, str]:
    """What the driver's JVM is started with: a session of this process's own, or the
    resident server (`checkers.resident`)."""
    config = {
        "spark.driver.memory": driver_memory,
        # The throughput collector: a check is a batch job that pauses cost nothing; at 20M
        # events it took 5 to 17% less wall and CPU time than G1. And only the quick JIT
        # compiler (C1): the JVM only plans and moves the Python workers' payloads, and
        # the optimising compiler spent half its CPU compiling the code that does it, 26
        # s of a 20M-event check, to make the tasks about 1 s faster (docs/performance.md).
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={_LOG_CONFIG} "
                                         "-XX:+UseParallelGC -XX:TieredStopAtLevel=1",
        # The Python workers allocate with the C library's malloc, not Arrow's default
        # (mimalloc): their joins and group-bys of whole partitions took about 12% less
        # CPU with it (docs/performance.md).
        "spark.executorEnv.ARROW_DEFAULT_MEMORY_POOL": "system",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    }
    if driver_host is not None:
        config.update({"spark.driver.host": driver_host,
                       "spark.driver.bindAddress": driver_host})
    return config


def _runtime_config(shuffle_partitions: int | None) -> dict[str, str]:
    """The settings of a check's session that a Spark Connect client may set too."""
    cores = os.cpu_count() or 2
    return {
        "spark.sql.shuffle.partitions": str(shuffle_partitions or max(4, 2 * cores)),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        # The finders' Python workers take whole partitions: fewer, larger batches.
        "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
        "spark.sql.adaptive.enabled": "true",
    }


def _connect_session(settings: SparkSettings, runtime: dict[str, str]) -> SparkSession:
    """A Spark Connect session. The resident server's Python workers are this checkout's
    interpreter and import the checkers themselves, and every check joins its one session
    (`checkers.resident`); any other server receives SHIPPED_PACKAGES as an artifact, in a
    session of this process's own, released when it exits."""
    if settings.remote == RESIDENT:
        from checkers.resident import use_resident
        url = use_resident(settings.driver_memory).session_url
    else:
        url = str(settings.remote)
    builder = SparkSession.builder.remote(url)
    for key, value in runtime.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.addTag(_CHECK_TAG)
    if settings.remote != RESIDENT:
        with tempfile.TemporaryDirectory(prefix="starquake-artifact-") as directory:
            session.addArtifacts(str(_project_zip(Path(directory))), pyfile=True)
        atexit.register(session.stop)
    return session


_CHECK_TAG = f"starquake-check-{os.getpid()}-{uuid.uuid4().hex[:12]}"
"""What marks this process's operations on a Spark Connect server, which other checks may
share: `cancel_jobs` cancels these only."""


def connected(session: SparkSession) -> bool:
    """Whether `session` is a Spark Connect client's (which has no SparkContext)."""
    return not isinstance(session, SparkSession)


def in_this_check(session: SparkSession, job: Callable[P, R]) -> Callable[P, R]:
    """`job`, run in another thread, as an operation of this check (`cancel_jobs` cancels
    it too). A Spark Connect client tags operations thread by thread."""
    if not connected(session):
        return job

    @functools.wraps(job)
    def tagged(*args: P.args, **kwargs: P.kwargs) -> R:
        session.addTag(_CHECK_TAG)
        return job(*args, **kwargs)

    return tagged


def cancel_jobs(session: SparkSession) -> None:
    """Cancel every job this check runs in `session`, from any thread."""
    if connected(session):
        session.interruptTag(_CHECK_TAG)
    else:
        session.sparkContext.cancelAllJobs()


def _project_zip(directory: Path) -> Path:
    """SHIPPED_PACKAGES as this process imports them, zipped into `directory` (the
    driver's Spark file directory, removed with the session; a temporary one for Spark
    Connect, which uploads the file)."""
    target = directory / "starquake-checkers.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for package in SHIPPED_PACKAGES:
            root = Path(importlib.import_module(package).__file__ or "").parent
            for source in sorted(root.rglob("*.py")):
                archive.write(source, source.relative_to(root.parent).as_posix())
    return target
