"""Real ZooKeeper ensembles as local processes, started from the Debian package's jars.

Each member gets its own directory (`zoo.cfg`, `data/myid`, `zookeeper.log`) and free
loopback ports, so any number of ensembles can run side by side. The ensemble offers the
fault controls a nemesis needs on a single member: kill, pause, resume, restart. Processes
are only ever signalled by the pid this module started.
"""

from __future__ import annotations

import logging
import re
import shutil
import time
from pathlib import Path

from harness.ports import free_ports
from harness.targets.local.processes import LocalProcess, wait_serving
from harness.targets.local.zookeeper_config import ServerAddress, ZooKeeperSettings, render_zoo_cfg
from harness.waits import four_letter_word, serving_mode
from history.errors import EnvironmentProblem

log = logging.getLogger(__name__)

JAVA_DIR = Path("/usr/share/java")
# zookeeper.jar's manifest lists its dependency jars; slf4j-simple gives its log lines a
# destination (stderr, which goes to the member's log file).
CLASSPATH = (JAVA_DIR / "zookeeper.jar", JAVA_DIR / "slf4j-simple.jar")
MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
# Small heap, serial GC and the quick JIT tier: several members share a two-core machine,
# and a ZooKeeper holding test metadata needs little of either.
JVM_FLAGS = (
    "-Xms32m",
    "-Xmx256m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Djava.awt.headless=true",
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd'T'HH:mm:ss.SSSZ",
)


class ZooKeeperStartFailed(EnvironmentProblem):
    """A member did not come up; the message carries the end of its log."""


def _java() -> str:
    java = shutil.which("java")
    if java is None:
        raise EnvironmentProblem("java not found on PATH; run scripts/setup.sh")
    for jar in CLASSPATH:
        if not jar.exists():
            raise EnvironmentProblem(f"{jar} is missing; run scripts/setup.sh (Debian zookeeper)")
    return java


class ZooKeeperNode:
    """One ensemble member: its files, its process, and the signals it can receive."""

    def __init__(
        self,
        node_id: int,
        servers: list[ServerAddress],
        directory: Path,
        settings: ZooKeeperSettings,
    ) -> None:
        self.node_id = node_id
        self.address = servers[node_id - 1]
        self.directory = directory
        self._servers = servers
        self._settings = settings
        command = [_java(), *JVM_FLAGS, "-cp", ":".join(str(jar) for jar in CLASSPATH),
                   MAIN_CLASS, str(self.config_path)]
        self.process = LocalProcess(f"zookeeper {node_id}", command, self.log_path,
                                    cwd=directory)

    @property
    def config_path(self) -> Path:
        return self.directory / "zoo.cfg"

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    @property
    def log_path(self) -> Path:
        return self.directory / "zookeeper.log"

    @property
    def client_address(self) -> str:
        return f"{self.address.host}:{self.address.client_port}"

    @property
    def pid(self) -> int | None:
        return self.process.pid

    @property
    def running(self) -> bool:
        return self.process.running

    def start(self) -> None:
        """Write the configuration and start the process (no-op when running). The log
        file is appended to, so a restarted member's history stays in one file."""
        if self.running:
            return
        self.data_dir.mkdir(parents=True, exist_ok=True)
        (self.data_dir / "myid").write_text(f"{self.node_id}\n")
        self.config_path.write_text(
            render_zoo_cfg(self.node_id, self._servers, str(self.data_dir), self._settings)
        )
        self.process.start()

    def mode(self) -> str | None:
        """`standalone`, `leader`, `follower` or `observer` while serving; None otherwise."""
        return serving_mode(self.address.host, self.address.client_port)

    def session_ids(self) -> set[int]:
        """Ids of the sessions whose clients are connected to this member right now
        (empty when it does not answer)."""
        try:
            answer = four_letter_word(self.address.host, self.address.client_port, "cons")
        except OSError:
            return set()
        return {int(sid, 16) for sid in re.findall(r"\bsid=0x([0-9a-fA-F]+)", answer)}

    def wait_serving(self, timeout: float = 60.0) -> None:
        """Return once the member serves clients (for a quorum member: it has joined a
        quorum). Raises ZooKeeperStartFailed if it exits or the time runs out."""
        wait_serving(self.process, lambda: self.mode() is not None, timeout,
                     ZooKeeperStartFailed)

    def stop(self, timeout: float = 10.0) -> None:
        self.process.stop(timeout)

    def kill(self) -> None:
        self.process.kill()

    def pause(self) -> None:
        """Freeze the member (SIGSTOP): its sockets stay open but nothing answers, which is
        what a long GC pause or a hung machine looks like to its peers and clients."""
        self.process.pause()

    def resume(self) -> None:
        self.process.resume()

    def log_tail(self, lines: int = 30) -> str:
        return self.process.log_tail(lines)


class ZooKeeperEnsemble:
    """`size` members under `base_dir` (`zk1/`, `zk2/`, ...), on free loopback ports.

    Members are addressed by index into `nodes` (0-based); member i has myid i + 1.
    Use as a context manager, or call `start()` and `stop()`.
    """

    def __init__(
        self,
        size: int,
        base_dir: Path | str,
        *,
        settings: ZooKeeperSettings = ZooKeeperSettings(),
        host: str = "127.0.0.1",
    ) -> None:
        if size < 1:
            raise ValueError(f"an ensemble needs at least one member, not {size}")
        ports = free_ports(3 * size, host)
        servers = [ServerAddress(host, *ports[3 * i : 3 * i + 3]) for i in range(size)]
        base = Path(base_dir)
        self.nodes = [
            ZooKeeperNode(i + 1, servers, base / f"zk{i + 1}", settings) for i in range(size)
        ]

    @property
    def connect_string(self) -> str:
        """`host:port,...` of every member, as ZooKeeper clients take it."""
        return ",".join(node.client_address for node in self.nodes)

    def start(self, timeout: float = 60.0) -> None:
        """Start every member and return once all serve; on failure stop them all and
        raise ZooKeeperStartFailed."""
        try:
            for node in self.nodes:
                node.start()
            self.wait_serving(timeout)
        except BaseException:
            self.stop()
            raise

    def wait_serving(self, timeout: float = 60.0) -> None:
        """Wait until every member serves (after a resume, say); raises
        ZooKeeperStartFailed if one has exited."""
        deadline = time.monotonic() + timeout
        for node in self.nodes:
            node.wait_serving(max(0.0, deadline - time.monotonic()))

    def stop(self, timeout: float = 10.0) -> None:
        """Stop every member cleanly (see `ZooKeeperNode.stop`)."""
        for node in self.nodes:
            node.stop(timeout)

    def serving_member(self, session_id: int) -> int | None:
        """Index of the member the client of `session_id` is connected to, if any."""
        for index, node in enumerate(self.nodes):
            if session_id in node.session_ids():
                return index
        return None

    def kill(self, index: int) -> None:
        self.nodes[index].kill()

    def pause(self, index: int) -> None:
        self.nodes[index].pause()

    def resume(self, index: int) -> None:
        self.nodes[index].resume()

    def restart(self, index: int, timeout: float = 60.0) -> None:
        """Stop member `index` cleanly if it runs (start it if it was killed), start it
        again with its data, and wait until it serves."""
        node = self.nodes[index]
        node.stop()
        node.start()
        node.wait_serving(timeout)

    def __enter__(self) -> ZooKeeperEnsemble:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
