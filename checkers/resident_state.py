"""Where the resident Spark Connect server keeps its state, and how its processes are told
apart from anyone else's: what `checkers.resident` (starting, using, stopping it) and the
watchdog that stops it when idle (`checkers.resident_watchdog`) share.

Everything lives in one directory (`STARQUAKE_SPARK_HOME`, by default
`~/.cache/starquake/spark`, docs/spark-resident.md): the state file, the server's log,
the watchdog's, the last-used time and two lock files. A process is ours only when its
command line names this directory, so a stale state file never makes us signal a pid the
system has since given to something else. Free of pyspark, so `starquake spark status`
stays quick.
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

HOME_ENV = "STARQUAKE_SPARK_HOME"
IDLE_ENV = "STARQUAKE_SPARK_IDLE_TIMEOUT"
DEFAULT_IDLE_TIMEOUT_S = 900
"""15 minutes without a check, and the server stops itself."""
LOOPBACK = "127.0.0.1"
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
WATCHDOG_MODULE = "checkers.resident_watchdog"
_STOP_WAIT_S = 30.0
"""How long a process has to leave after SIGTERM before it gets SIGKILL."""


@dataclass(frozen=True)
class ServerState:
    """The server we started: its JVM, its port on loopback, its log, the watchdog's pid
    and what it was started with."""

    pid: int
    port: int
    log: str
    watchdog_pid: int
    idle_timeout_s: int
    driver_memory: str
    code: str
    """The fingerprint of the checkers it serves (`checkers.resident.code_fingerprint`)."""
    session_id: str
    """The one Spark Connect session every check joins (`checkers.resident`)."""
    started_at: float

    @property
    def url(self) -> str:
        """The server's address."""
        return f"sc://{LOOPBACK}:{self.port}"

    @property
    def session_url(self) -> str:
        """The address of the shared session, for a check."""
        return f"{self.url}/;session_id={self.session_id}"


def state_home() -> Path:
    """The directory of the resident server's state, made on first use."""
    configured = os.environ.get(HOME_ENV)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    home = Path(configured) if configured else cache / "starquake" / "spark"
    home.mkdir(parents=True, exist_ok=True)
    return home.resolve()


def idle_timeout_s() -> int:
    """$STARQUAKE_SPARK_IDLE_TIMEOUT in seconds, else the default."""
    text = os.environ.get(IDLE_ENV, "").strip()
    if not text:
        return DEFAULT_IDLE_TIMEOUT_S
    if not text.isdigit() or int(text) == 0:
        from history.errors import BadInput
        raise BadInput(f"{IDLE_ENV}={text!r}: expected a whole number of seconds above 0")
    return int(text)


def server_marker(home: Path) -> str:
    """The argument that names `home` on the server's command line (a Spark setting of
    our own, which Spark ignores)."""
    return f"spark.starquake.home={home}"


def read_state(home: Path) -> ServerState | None:
    """The state file's server, or None when there is none (or it cannot be read). A
    field the file lacks (one written by another version of starquake) reads as empty,
    so the server it names can still be told apart and stopped, and is never used: its
    code fingerprint matches none."""
    try:
        recorded = json.loads((home / "state.json").read_text())
        fields = {field.name: recorded.get(field.name, _EMPTY[field.type])
                  for field in dataclasses.fields(ServerState)}
        return ServerState(**fields)
    except (OSError, ValueError, TypeError, AttributeError, KeyError):
        return None


_EMPTY: dict[object, object] = {"int": 0, "float": 0.0, "str": ""}
"""A missing field's value, by its type as the dataclass names it."""


def write_state(home: Path, state: ServerState) -> None:
    """Replace the state file at once: a reader sees the old state or the new one."""
    partial = home / "state.json.partial"
    partial.write_text(json.dumps(asdict(state), indent=2) + "\n")
    partial.replace(home / "state.json")


def forget_state(home: Path, pid: int) -> None:
    """Remove the state file when it still names server `pid`."""
    state = read_state(home)
    if state is not None and state.pid == pid:
        (home / "state.json").unlink(missing_ok=True)


def touch(home: Path) -> None:
    """Mark the server used now: the watchdog's idle time starts again."""
    (home / "last-used").touch()


def idle_for_s(home: Path) -> float:
    """Seconds since the server was last used (since ever, with no mark)."""
    try:
        return time.time() - (home / "last-used").stat().st_mtime
    except FileNotFoundError:
        return float("inf")


def is_server(pid: int, home: Path) -> bool:
    """Whether `pid` is a live resident server of `home`."""
    return _running_with(pid, (server_marker(home),))


def is_running(pid: int) -> bool:
    """Whether `pid` runs at all. What a server being started is watched by: its command
    line changes twice as spark-submit execs spark-class and then the JVM, and a read of it
    at such a moment can miss the marker (seen about one start in three on a quiet machine,
    failing the start of a server that went on to serve)."""
    return _running_with(pid, ())


def is_watchdog(pid: int, home: Path) -> bool:
    """Whether `pid` is a live watchdog of `home`."""
    return _running_with(pid, (WATCHDOG_MODULE, str(home)))


def _running_with(pid: int, arguments: tuple[str, ...]) -> bool:
    """Whether `pid` runs (a zombie does not) with each of `arguments` on its command
    line."""
    proc = Path("/proc") / str(pid)
    try:
        argv = (proc / "cmdline").read_bytes().decode(errors="replace").split("\0")
        status = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return status != "Z" and all(a in argv for a in arguments)


def stop_process(pid: int, still_ours: Callable[[int], bool]) -> None:
    """SIGTERM to `pid` while `still_ours(pid)`, SIGKILL if it has not left in
    _STOP_WAIT_S; returns once it is gone."""
    for sig, wait_s in ((signal.SIGTERM, _STOP_WAIT_S), (signal.SIGKILL, 10.0)):
        if not still_ours(pid):
            return
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while still_ours(pid) and time.monotonic() < deadline:
            time.sleep(0.2)


@contextmanager
def start_lock(home: Path) -> Iterator[None]:
    """Held while a server is started, stopped or judged idle: two commands never start
    two servers, and the watchdog never stops one a command is about to use."""
    with (home / "start.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


_IN_USE: list[int] = []
"""The descriptor of this process's shared lock on in-use.lock, held until it exits."""


def hold_in_use(home: Path) -> None:
    """Mark the server in use by this process until it exits (a shared lock: any number
    of commands use it at once; the watchdog sees it held and does not stop the server
    under a long check)."""
    if _IN_USE:
        return
    descriptor = os.open(home / "in-use.lock", os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(descriptor, fcntl.LOCK_SH)
    _IN_USE.append(descriptor)


def in_use(home: Path) -> bool:
    """Whether a command holds the server in use (`hold_in_use`)."""
    descriptor = os.open(home / "in-use.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(descriptor)
    return False


@contextmanager
def unused(home: Path) -> Iterator[None]:
    """Wait until no command holds the server in use, and keep it so in the block."""
    descriptor = os.open(home / "in-use.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)
