"""Where and how the checkers' Spark job runs: the settings every command that checks
takes (`check`, `run`, `suite`, `conform`, `reproduce`, the benches), as options or
environment variables, and how a parent command hands them to the `starquake check` it
spawns. Kept free of pyspark, so `--help` stays fast; `checkers.session` turns the
settings into a SparkSession (docs/spark-cluster.md).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

DEFAULT_MASTER = "local[*]"
_OPTIONS = (
    ("--spark-master", "STARQUAKE_SPARK_MASTER",
     f"Spark master URL, e.g. spark://HOST:7077 [{DEFAULT_MASTER}]."),
    ("--spark-driver-host", "STARQUAKE_SPARK_DRIVER_HOST",
     "The address executors reach this process at [loopback for local masters; for "
     "spark://, this machine's address on the route to the master]."),
    ("--spark-python", "STARQUAKE_SPARK_PYTHON",
     "The Python interpreter executors start, at this path on every worker, with the "
     "project's dependencies installed [$PYSPARK_PYTHON, else this interpreter]."),
    ("--spark-shared-dir", "STARQUAKE_SPARK_SHARED_DIR",
     "A directory at the same path on the driver and every worker: the prepared files "
     "are copied there for the check, and removed after it [none: they are read where "
     "they are]."),
)

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class SparkSettings:
    master: str = DEFAULT_MASTER
    driver_host: str | None = None
    """None: loopback for a local master, the route's address for a spark:// one."""
    python: str | None = None
    """None: $PYSPARK_PYTHON, else the driver's own interpreter path."""
    shared_dir: Path | None = None

    @property
    def local(self) -> bool:
        """The executors run inside this process's JVM, on this machine."""
        return self.master.startswith("local")

    def check_args(self) -> list[str]:
        """The same settings as options of `starquake check`."""
        values = (self.master, self.driver_host, self.python, self.shared_dir)
        return [text for (flag, _env, _help), value in zip(_OPTIONS, values, strict=True)
                if value is not None for text in (flag, str(value))]


def spark_options(command: F) -> F:
    """Add the Spark options to a click command, handed to it as one `spark` argument.
    Each option falls back to its environment variable (STARQUAKE_SPARK_MASTER, ...)."""
    @functools.wraps(command)
    def with_settings(*args: Any, spark_master: str | None, spark_driver_host: str | None,
                      spark_python: str | None, spark_shared_dir: Path | None,
                      **kwargs: Any) -> Any:
        spark = SparkSettings(spark_master or DEFAULT_MASTER, spark_driver_host or None,
                              spark_python or None, spark_shared_dir)
        return command(*args, spark=spark, **kwargs)

    decorated: Callable[..., Any] = with_settings
    for flag, env, text in reversed(_OPTIONS):
        kind = (click.Path(file_okay=False, exists=True, path_type=Path)
                if flag == "--spark-shared-dir" else click.STRING)
        decorated = click.option(flag, envvar=env, show_envvar=True, type=kind,
                                 help=text)(decorated)
    return decorated  # type: ignore[return-value]
