"""How the harness tells that a node serves: small strategy classes, as testcontainers has.

A strategy answers one question, "ready yet?", about a node the harness can reach (its
address on the cluster network, its log, a command run inside it). `wait_ready` asks until
yes, and when the node exits or the time runs out raises an error carrying the end of its
log, which is what a user needs to see why a node did not come up.
"""

from __future__ import annotations

import re
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from history.errors import EnvironmentProblem


class NodeNotReady(EnvironmentProblem):
    """A node exited or did not become ready in time; the message ends with its log."""


class Waitable(Protocol):
    """What a strategy may look at."""

    @property
    def name(self) -> str: ...

    @property
    def ip(self) -> str:
        """Where the harness reaches the node."""
        ...

    def running(self) -> bool: ...

    def logs(self) -> str: ...

    def exec(self, argv: Sequence[str]) -> int:
        """Run a command inside the node; its exit code."""
        ...


class WaitStrategy(Protocol):
    def ready(self, node: Waitable) -> bool: ...


@dataclass(frozen=True)
class TcpPort:
    """Ready once the port accepts a connection (at `host`, default the node's address)."""

    port: int
    host: str | None = None

    def ready(self, node: Waitable) -> bool:
        try:
            with socket.create_connection((self.host or node.ip, self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def __str__(self) -> str:
        return f"port {self.port} to accept connections"


# Modes `srvr` reports once a member serves clients; until then it says it is not serving.
SERVING_MODES = ("standalone", "leader", "follower", "observer")



def four_letter_word(host: str, port: int, word: str, timeout: float = 2.0) -> str:
    """Send one of ZooKeeper's four-letter admin commands and return the whole answer.
    Raises OSError when the member does not answer (down, paused, or not listening yet)."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(word.encode())
        chunks = []
        while chunk := sock.recv(4096):
            chunks.append(chunk)
    return b"".join(chunks).decode(errors="replace")


def serving_mode(host: str, port: int) -> str | None:
    """The mode `srvr` reports (`standalone`, `leader`, `follower`, `observer`) while the
    member at host:port serves clients; None while it elects, is paused or is down."""
    try:
        answer = four_letter_word(host, port, "srvr")
    except OSError:
        return None
    for line in answer.splitlines():
        if line.startswith("Mode: "):
            mode = line.removeprefix("Mode: ").strip()
            return mode if mode in SERVING_MODES else None
    return None


def http_answers(url: str, status: int = 200, timeout: float = 1.0) -> bool:
    """GET of `url` answers `status` now: the one readiness probe of an HTTP endpoint."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return bool(response.status == status)
    except urllib.error.HTTPError as exc:
        return exc.code == status
    except (urllib.error.URLError, OSError):
        return False


@dataclass(frozen=True)
class HttpStatus:
    """Ready once GET of `path` answers `status` (a health endpoint), at `host`, default
    the node's address."""

    port: int
    path: str
    status: int = 200
    host: str | None = None

    def ready(self, node: Waitable) -> bool:
        return http_answers(f"http://{self.host or node.ip}:{self.port}{self.path}",
                            self.status)

    def __str__(self) -> str:
        return f"GET :{self.port}{self.path} to answer {self.status}"


@dataclass(frozen=True)
class LogLine:
    """Ready once the node's log has a line matching `pattern` (a regular expression)."""

    pattern: str

    def ready(self, node: Waitable) -> bool:
        return re.search(self.pattern, node.logs(), re.MULTILINE) is not None

    def __str__(self) -> str:
        return f"a log line matching {self.pattern!r}"


@dataclass(frozen=True)
class CommandSucceeds:
    """Ready once `argv`, run inside the node, exits 0."""

    argv: tuple[str, ...]

    def ready(self, node: Waitable) -> bool:
        return node.exec(self.argv) == 0

    def __str__(self) -> str:
        return f"{' '.join(self.argv)!r} to succeed"


@dataclass(frozen=True)
class ZooKeeperServing:
    """Ready once `srvr` reports a serving mode: a quorum member has joined a quorum."""

    port: int

    def ready(self, node: Waitable) -> bool:
        return serving_mode(node.ip, self.port) is not None

    def __str__(self) -> str:
        return f"ZooKeeper on port {self.port} to serve"


def _tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


def wait_ready(node: Waitable, strategy: WaitStrategy, timeout: float) -> None:
    """Return once `strategy` says `node` is ready; raise NodeNotReady if the node stops
    running or `timeout` seconds pass first."""
    wait_for(lambda: strategy.ready(node), node.running, timeout,
             lambda how: NodeNotReady(f"{node.name} {how} (waited for {strategy}); end of "
                                      f"its log:\n{_tail(node.logs())}"))


def wait_for(ready: Callable[[], bool], running: Callable[[], bool], timeout: float,
             failed: Callable[[str], Exception]) -> None:
    """The one readiness loop of every node, container or process: return once `ready()`;
    raise `failed("exited")` when `running()` turns false first, or `failed("not ready
    after N s")` when `timeout` seconds pass. The error names the node and ends with its
    log: what a user needs to see why a node did not come up."""
    deadline = time.monotonic() + timeout
    while not ready():
        if not running():
            raise failed("exited")
        if time.monotonic() > deadline:
            raise failed(f"not ready after {timeout:.0f} s")
        time.sleep(0.1)
