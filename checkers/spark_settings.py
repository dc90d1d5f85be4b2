"""Where and how the checkers' Spark job runs: the settings every command that checks
takes (`check`, `run`, `suite`, `conform`, `reproduce`, the benches), as options or
environment variables, and how a parent command hands them to the `starquake check` it
spawns. Kept free of pyspark, so `--help` stays fast; `checkers.session` turns the
settings into a SparkSession (docs/spark-cluster.md).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import click

DEFAULT_MASTER = "local[*]"
DEFAULT_DRIVER_MEMORY = "3g"
RESIDENT = "local-resident"
"""The `--spark-remote` that means this machine's resident Spark Connect server, started
on first use (`checkers.resident`, docs/spark-resident.md): what a command that checks
uses when no Spark is named, so only the first check of a session pays for Spark's start."""
OWN = "own"
"""The `--spark-remote` that means a Spark of the command's own, started for it and
stopped with it: what naming a `--spark-master` implies too."""
_MEMORY_SIZE = re.compile(r"[1-9][0-9]*[kmgt]?", re.IGNORECASE)
OPTIONS = (
    # (option, environment variable, help): the options every checking command takes, and
    # the pytest plugin's `--starquake-spark-*`.
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
    ("--spark-driver-memory", "STARQUAKE_SPARK_DRIVER_MEMORY",
     f"The driver JVM's heap, e.g. 1g or 512m (with a local master the executors share "
     f"it) [{DEFAULT_DRIVER_MEMORY}]."),
    ("--spark-remote", "STARQUAKE_SPARK_REMOTE",
     f"Where the check runs: {RESIDENT}, this machine's resident Spark Connect server "
     "(`starquake spark up`), started on first use and stopped when idle; sc://HOST:PORT, "
     f"any Spark Connect server; or {OWN}, a Spark of the command's own (--spark-master) "
     f"[{RESIDENT}, or {OWN} when --spark-master is given]."),
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
    driver_memory: str = DEFAULT_DRIVER_MEMORY
    remote: str | None = None
    """A Spark Connect URL or RESIDENT; None: a Spark of this process's own (OWN)."""

    @property
    def local(self) -> bool:
        """The executors run inside this process's JVM, on this machine."""
        return self.master.startswith("local")

    def check_args(self) -> list[str]:
        """The same settings as options of `starquake check`."""
        values = (self.master, self.driver_host, self.python, self.shared_dir,
                  self.driver_memory, self.remote or OWN)
        return [text for (flag, _env, _help), value in zip(OPTIONS, values, strict=True)
                if value is not None for text in (flag, str(value))]


def settings_from(values: Sequence[str | Path | None],
                  default_remote: str | None = RESIDENT) -> SparkSettings:
    """The settings the options' values make, in OPTIONS order; None or empty: the default.
    Without a remote the check goes to `default_remote`, unless a master is named: that
    asks for a Spark of the command's own."""
    master, driver_host, python, shared_dir, driver_memory, remote = values
    chosen = str(remote or "") or (None if master else default_remote)
    return SparkSettings(str(master or DEFAULT_MASTER), str(driver_host or "") or None,
                         str(python or "") or None, Path(shared_dir) if shared_dir else None,
                         str(driver_memory or DEFAULT_DRIVER_MEMORY),
                         None if chosen == OWN else chosen)


def memory_size_problem(value: str | None) -> str | None:
    """Why `value` is no driver memory size, or None when it is one (or not given): refused
    up front, with the option's name, rather than by a JVM that will not start."""
    if value is not None and not _MEMORY_SIZE.fullmatch(value):
        return f"{value!r}: expected a size such as 512m, 2g or 1t"
    return None


def remote_problem(value: str | None) -> str | None:
    """Why `value` is no Spark Connect remote, or None when it is one (or not given)."""
    if value and value not in (RESIDENT, OWN) and not value.startswith("sc://"):
        return f"{value!r}: expected {RESIDENT}, sc://HOST:PORT or {OWN}"
    return None


def _refusing(problem_of: Callable[[str | None], str | None]
              ) -> Callable[[click.Context, click.Parameter, str | None], str | None]:
    """An option's callback that refuses a value `problem_of` finds a problem with."""
    def check(_context: click.Context, _option: click.Parameter,
              value: str | None) -> str | None:
        problem = problem_of(value)
        if problem is not None:
            raise click.BadParameter(problem)
        return value

    return check


_CHECKS = {"--spark-driver-memory": _refusing(memory_size_problem),
           "--spark-remote": _refusing(remote_problem)}


def spark_options(command: F) -> F:
    """Add the Spark options to a click command, handed to it as one `spark` argument.
    Each option falls back to its environment variable (STARQUAKE_SPARK_MASTER, ...);
    without a Spark named, the check goes to the resident server."""
    return _with_spark_options(command, RESIDENT)


def own_spark_options(command: F) -> F:
    """The Spark options of a command that must run a Spark of its own unless a remote is
    named: `bench check` reads its driver JVM's CPU time and memory."""
    return _with_spark_options(command, None)


def _with_spark_options(command: F, default_remote: str | None) -> F:
    @functools.wraps(command)
    def with_settings(*args: Any, spark_master: str | None, spark_driver_host: str | None,
                      spark_python: str | None, spark_shared_dir: Path | None,
                      spark_driver_memory: str | None, spark_remote: str | None,
                      **kwargs: Any) -> Any:
        spark = settings_from((spark_master, spark_driver_host, spark_python,
                               spark_shared_dir, spark_driver_memory, spark_remote),
                              default_remote)
        return command(*args, spark=spark, **kwargs)

    decorated: Callable[..., Any] = with_settings
    for flag, env, text in reversed(OPTIONS):
        kind = (click.Path(file_okay=False, exists=True, path_type=Path)
                if flag == "--spark-shared-dir" else click.STRING)
        if flag == "--spark-remote" and default_remote is None:
            text = text[:text.rindex("[")] + f"[{OWN}]."
        decorated = click.option(flag, envvar=env, show_envvar=True, type=kind,
                                 callback=_CHECKS.get(flag), help=text)(decorated)
    return decorated  # type: ignore[return-value]
