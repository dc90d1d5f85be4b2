"""The resident Spark Connect server: one local Spark kept running between checks, so a
check pays for a Spark Connect client (about a second) rather than for a JVM, a
SparkSession and the Python workers (docs/spark-resident.md).

`use_resident` is what `--spark-remote local-resident` calls: it returns a server that
answers, starting one when there is none, when the one recorded has died, or when the
checkers' code changed since it started (its Python workers would judge with the old
code). Start-up happens under a file lock, so two commands at once share one server, and
a command sees the server only once its port answers.

Every check joins one Spark Connect session, named in the state file: the server starts
Python workers per session (their environment names the session), so a session per check
would start them again for each check, seconds on a loaded machine, where a shared one
finds them warm. The session lives as long as the server, and a check never closes it.

Each user holds the server in use until it exits; a watchdog beside the server stops it
after its idle timeout with no user (`checkers.resident_watchdog`).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import socket
import subprocess
import sys
import time
import uuid
from importlib.metadata import version
from pathlib import Path

import click

from checkers.resident_state import (
    LOOPBACK,
    SERVER_CLASS,
    WATCHDOG_MODULE,
    ServerState,
    forget_state,
    hold_in_use,
    idle_timeout_s,
    is_running,
    is_server,
    is_watchdog,
    read_state,
    server_marker,
    start_lock,
    state_home,
    stop_process,
    touch,
    unused,
    write_state,
)
from history.errors import EnvironmentProblem

START_TIMEOUT_S = 300.0
"""How long a server may take to answer: about 15 s on an idle machine, several times that
on a loaded one."""
_CLIENT_ENVIRONMENT = ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED", "PYSPARK_GATEWAY_PORT",
                       "PYSPARK_GATEWAY_SECRET")
"""What a Spark client process may have set that must not reach the server."""


def use_resident(driver_memory: str) -> ServerState:
    """A resident server that answers, held in use by this process until it exits."""
    home = state_home()
    with start_lock(home):
        state = _live_server(home)
        if state is None:
            state = _start(home, driver_memory, idle_timeout_s())
        hold_in_use(home)
        touch(home)
    return state


def start_resident(driver_memory: str, idle_s: int) -> tuple[ServerState, bool]:
    """`starquake spark up`: the server, and whether this call started it."""
    home = state_home()
    with start_lock(home):
        state = _live_server(home)
        started = state is None
        if state is None:
            state = _start(home, driver_memory, idle_s)
        touch(home)
    return state, started


def stop_resident() -> ServerState | None:
    """`starquake spark down`: stop the server and its watchdog; the state it had, or None
    when none was recorded."""
    home = state_home()
    with start_lock(home):
        state = read_state(home)
        if state is not None:
            _stop(home, state)
    return state


def answers(port: int) -> bool:
    """Whether something accepts connections on `port` on loopback: the Spark Connect
    server opens its port only once its SparkSession is up."""
    try:
        with socket.create_connection((LOOPBACK, port), timeout=2.0):
            return True
    except OSError:
        return False


def code_fingerprint() -> str:
    """The interpreter, pyspark's version and every module of the checkers as they are now
    (path, size, modification time): what the server's Python workers import."""
    from checkers.session import SHIPPED_PACKAGES

    digest = hashlib.sha256(f"{sys.executable}\0{version('pyspark')}".encode())
    for package in SHIPPED_PACKAGES:
        spec = importlib.util.find_spec(package)
        for root in (spec.submodule_search_locations or []) if spec else []:
            for source in sorted(Path(root).rglob("*.py")):
                status = source.stat()
                digest.update(f"\0{source}\0{status.st_size}\0{status.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def _live_server(home: Path) -> ServerState | None:
    """The recorded server when it runs, answers and serves the current code; otherwise
    None, with whatever was left of it stopped (waiting for the checks that use a server
    with old code to finish first)."""
    state = read_state(home)
    if state is None:
        return None
    running = is_server(state.pid, home)
    reason = ("has exited" if not running else "does not answer" if not answers(state.port)
              else "serves checkers that have changed since" if state.code != code_fingerprint()
              else None)
    if reason is None:
        return state
    click.echo(f"starquake: the resident Spark server (pid {state.pid}) {reason}: "
               "starting another", err=True)
    with unused(home):
        _stop(home, state)
    return None


def _start(home: Path, driver_memory: str, idle_s: int) -> ServerState:
    """Start a server and its watchdog, wait until the server answers, record both."""
    import pyspark

    from checkers.session import driver_config

    started_at = time.time()
    port = _free_port()
    log = home / "server.log"
    spark_home = Path(pyspark.__file__).parent
    config = {**driver_config(driver_memory, LOOPBACK),
              "spark.connect.grpc.binding.address": LOOPBACK,
              "spark.connect.grpc.binding.port": str(port),
              # The shared session (see the module) ends with the server, not before.
              "spark.connect.session.manager.defaultSessionTimeout": "7d"}
    argv = [str(spark_home / "bin" / "spark-submit"), "--class", SERVER_CLASS,
            "--name", "starquake-resident", "--master", "local[*]",
            *(text for key, value in config.items() for text in ("--conf", f"{key}={value}")),
            "--conf", server_marker(home)]
    environment = {name: value for name, value in os.environ.items()
                   if name not in _CLIENT_ENVIRONMENT}
    # The server's Python workers are this interpreter, so they import this checkout.
    environment.update({"SPARK_HOME": str(spark_home), "PYSPARK_PYTHON": sys.executable,
                        "SPARK_LOCAL_IP": LOOPBACK})
    log.write_text("")
    server = _detached(argv, log, home, environment)
    try:
        wait_until_answering(home, server, port, log)
    except BaseException:
        # A Ctrl-C, an error or a start that took too long: until the state file and the
        # watchdog exist, nothing else would ever stop it. Judged by its pid, as the wait
        # is: its command line may be changing under an exec.
        stop_process(server, is_running)
        raise
    watchdog = _detached([sys.executable, "-m", WATCHDOG_MODULE, str(home), str(server),
                          str(idle_s)], home / "watchdog.log", home, None)
    state = ServerState(server, port, str(log), watchdog, idle_s, driver_memory,
                        code_fingerprint(), str(uuid.uuid4()), started_at)
    write_state(home, state)
    return state


def _detached(argv: list[str], output: Path, home: Path,
              environment: dict[str, str] | None) -> int:
    """Start `argv` in `home` as a child of no command of ours, appending its output to
    `output`; its pid. A shell starts it in the background and exits, in a session of its
    own: a Ctrl-C meant for the command that starts it does not reach it, nor does ending
    that command's process tree (a run's lifeline does, docs/running.md), and the system
    reaps it when it exits. The working directory keeps Spark's files out of the user's."""
    launcher = subprocess.run(["/bin/sh", "-c", '"$@" </dev/null >>"$0" 2>&1 & echo $!',
                               str(output), *argv], cwd=home, env=environment,
                              capture_output=True, text=True, check=True,
                              start_new_session=True)
    return int(launcher.stdout.strip())


def wait_until_answering(home: Path, server: int, port: int, log: Path) -> None:
    """Return once the server `_start` just started answers on `port`; raise
    EnvironmentProblem, naming its log, when it exits first or takes too long (`_start`
    then stops it)."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while not answers(port):
        if not is_running(server):
            raise EnvironmentProblem(f"the resident Spark server exited while starting: "
                                     f"see {log}")
        if time.monotonic() > deadline:
            raise EnvironmentProblem(f"the resident Spark server did not answer on port "
                                     f"{port} within {START_TIMEOUT_S:.0f} s: see {log}")
        time.sleep(0.25)


def _stop(home: Path, state: ServerState) -> None:
    """Stop the watchdog first (it would otherwise see the server go and tidy up beside
    us), then the server; forget it."""
    stop_process(state.watchdog_pid, lambda pid: is_watchdog(pid, home))
    stop_process(state.pid, lambda pid: is_server(pid, home))
    forget_state(home, state.pid)


def _free_port() -> int:
    """A port free on loopback now (the server binds it a few seconds later; one taken in
    between fails the start with a message naming the log)."""
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        port: int = probe.getsockname()[1]
    return port
