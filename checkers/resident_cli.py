"""`starquake spark up | down | status`: the resident Spark Connect server by hand
(`checkers.resident`; docs/spark-resident.md). The first check that uses it (every check
without `--spark-remote own` or a `--spark-master`) starts it as well; `up` is for starting
it ahead of the checks, with settings of one's choosing."""

from __future__ import annotations

import time

import click

from checkers.resident_state import (
    DEFAULT_IDLE_TIMEOUT_S,
    IDLE_ENV,
    idle_for_s,
    is_server,
    read_state,
    state_home,
)
from checkers.spark_settings import DEFAULT_DRIVER_MEMORY, memory_size_problem
from history.errors import BadInput


@click.group()
def spark() -> None:
    """The resident Spark Connect server that checks go through by default."""


@spark.command()
@click.option("--spark-driver-memory", envvar="STARQUAKE_SPARK_DRIVER_MEMORY",
              show_envvar=True, default=DEFAULT_DRIVER_MEMORY, show_default=True,
              help="The server JVM's heap (its executors share it).")
@click.option("--idle-timeout", type=click.IntRange(min=1), envvar=IDLE_ENV, show_envvar=True,
              default=DEFAULT_IDLE_TIMEOUT_S, show_default=True,
              help="Seconds without a check after which the server stops itself.")
def up(spark_driver_memory: str, idle_timeout: int) -> None:
    """Start the server on loopback, unless it runs already; print its address."""
    from checkers.resident import start_resident

    problem = memory_size_problem(spark_driver_memory)
    if problem is not None:
        raise BadInput(f"--spark-driver-memory {problem}")
    state, started = start_resident(spark_driver_memory, idle_timeout)
    verb = "started" if started else "already up"
    click.echo(f"spark: {verb}: {state.url} (pid {state.pid}, heap {state.driver_memory}, "
               f"stops after {state.idle_timeout_s} s unused, log {state.log})")


@spark.command()
def down() -> None:
    """Stop the server this machine's state directory records, and its watchdog."""
    from checkers.resident import stop_resident

    state = stop_resident()
    if state is None:
        click.echo(f"spark: no resident server recorded in {state_home()}")
    else:
        click.echo(f"spark: stopped the server on port {state.port} (pid {state.pid})")


@spark.command()
def status() -> None:
    """Whether the server is up and answering. Exits 0 when it answers, 4 when not."""
    from checkers.resident import answers
    from history.errors import EnvironmentProblem

    home = state_home()
    state = read_state(home)
    if state is None:
        raise EnvironmentProblem(f"spark: down (no resident server recorded in {home})")
    if not is_server(state.pid, home):
        raise EnvironmentProblem(f"spark: down (server pid {state.pid} has exited; "
                                 f"log {state.log})")
    if not answers(state.port):
        raise EnvironmentProblem(f"spark: not answering on {state.url} (pid {state.pid}; "
                                 f"log {state.log})")
    idle = idle_for_s(home)
    up_s = time.time() - state.started_at
    click.echo(f"spark: up and answering: {state.url} (pid {state.pid}, up {up_s:.0f} s, "
               f"last used {idle:.0f} s ago, stops after {state.idle_timeout_s} s unused, "
               f"log {state.log})")
