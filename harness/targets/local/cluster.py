"""One cluster of the reference implementation as local processes: a ZooKeeper ensemble,
bookies and brokers on free loopback ports.

The harness reaches the brokers only as a third party's would be reached: the binary
protocol URL, the admin URL (whose health check says when a broker serves) and process
control (kill, pause, resume, restart by pid). Used as a context manager it always stops
everything it started, also when starting fails half-way.
"""

from __future__ import annotations

import logging
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path

from harness.ports import free_ports
from harness.targets.local.processes import LocalProcess, wait_serving
from harness.targets.local.zookeeper import ZooKeeperEnsemble
from harness.targets.local.zookeeper_config import ZooKeeperSettings
from harness.waits import http_answers
from history.errors import EnvironmentProblem

log = logging.getLogger(__name__)

HOST = "127.0.0.1"


class NodeStartFailed(EnvironmentProblem):
    """A bookie or broker did not come up; the message carries the end of its log."""


@dataclass(frozen=True)
class ClusterSettings:
    name: str = "standalone"
    brokers: int = 3
    bookies: int = 1
    zookeepers: int = 1
    session_timeout_ms: int = 4000
    """The brokers' ZooKeeper session timeout: short, so faults act within seconds."""
    session_expired_policy: str = "reconnect"
    """PIP-57's policy; always explicit (Pulsar's default changed between versions)."""
    mutants: tuple[str, ...] = ()
    broker_args: tuple[str, ...] = ()
    """Further `python -m impl.broker` flags, e.g. `--replicate-individually-deleted`."""
    bookie_args: tuple[str, ...] = ()
    """Further `python -m impl.bookie` flags, e.g. `--metadata-digest-file`."""
    zookeeper: ZooKeeperSettings = field(default_factory=ZooKeeperSettings)
    start_timeout: float = 60.0
    first_broker_ports: tuple[int, int] | None = None
    """Service and admin port of the first broker, the others' counting up from them, so
    a target file can name them; None: free ports."""


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=0.5):
            return True
    except OSError:
        return False


class Node:
    """A bookie or broker: its process plus how to tell that it serves."""

    def __init__(self, process: LocalProcess) -> None:
        self.process = process

    @property
    def name(self) -> str:
        return self.process.name

    @property
    def pid(self) -> int | None:
        return self.process.pid

    @property
    def running(self) -> bool:
        return self.process.running

    def serving(self) -> bool:
        raise NotImplementedError

    def wait_serving(self, timeout: float) -> None:
        wait_serving(self.process, self.serving, timeout, NodeStartFailed)

    def start(self) -> None:
        self.process.start()

    def stop(self) -> None:
        self.process.stop()

    def kill(self) -> None:
        self.process.kill()

    def pause(self) -> None:
        self.process.pause()

    def resume(self) -> None:
        self.process.resume()

    def restart(self, timeout: float = 60.0) -> None:
        """Stop it cleanly if it runs, start it again on the same ports, wait until it
        serves."""
        self.process.stop()
        self.process.start()
        self.wait_serving(timeout)


class BookieNode(Node):
    def __init__(self, index: int, port: int, process: LocalProcess) -> None:
        super().__init__(process)
        self.index = index
        self.port = port

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"

    def serving(self) -> bool:
        return _port_open(self.port)


class BrokerNode(Node):
    def __init__(self, index: int, port: int, admin_port: int, process: LocalProcess) -> None:
        super().__init__(process)
        self.index = index
        self.port = port
        self.admin_port = admin_port

    @property
    def service_url(self) -> str:
        return f"pulsar://{HOST}:{self.port}"

    @property
    def admin_url(self) -> str:
        return f"http://{HOST}:{self.admin_port}"

    def serving(self) -> bool:
        return http_answers(f"{self.admin_url}/admin/v2/brokers/health")


class LocalCluster:
    """Start with `start()` or `with LocalCluster(...) as cluster:`; `stop()` stops
    brokers, then bookies, then ZooKeeper."""

    def __init__(self, base_dir: Path | str, settings: ClusterSettings = ClusterSettings()) -> None:
        self.settings = settings
        self.base_dir = Path(base_dir)
        self.zookeeper = ZooKeeperEnsemble(settings.zookeepers, self.base_dir / "zookeeper",
                                           settings=settings.zookeeper)
        ports = free_ports(settings.bookies + 2 * settings.brokers, HOST)
        if settings.first_broker_ports is not None:
            service, admin = settings.first_broker_ports
            ports[settings.bookies:] = [port for i in range(settings.brokers)
                                        for port in (service + i, admin + i)]
        python = sys.executable
        mutants = ",".join(settings.mutants)
        self.bookies = [
            BookieNode(i, ports[i], LocalProcess(
                f"bookie-{i}",
                [python, "-m", "impl.bookie", "--port", str(ports[i]),
                 "--data-dir", str(self.base_dir / f"bookie-{i}" / "data"),
                 "--zk", self.zk_connect_string, *(["--mutants", mutants] if mutants else []),
                 *settings.bookie_args],
                self.base_dir / f"bookie-{i}" / "bookie.log"))
            for i in range(settings.bookies)
        ]
        broker_ports = ports[settings.bookies:]
        self.brokers = [
            BrokerNode(i, broker_ports[2 * i], broker_ports[2 * i + 1],
                       self._broker_process(i, broker_ports[2 * i], broker_ports[2 * i + 1]))
            for i in range(settings.brokers)
        ]

    @property
    def zk_connect_string(self) -> str:
        """ZooKeeper with the cluster's chroot: every node of the cluster uses it."""
        return f"{self.zookeeper.connect_string}/{self.settings.name}"

    def _broker_process(self, index: int, port: int, admin_port: int) -> LocalProcess:
        s = self.settings
        command = [
            sys.executable, "-m", "impl.broker",
            "--cluster", s.name, "--zk", self.zk_connect_string,
            "--port", str(port), "--admin-port", str(admin_port), "--advertised-host", HOST,
            "--session-timeout-ms", str(s.session_timeout_ms),
            "--session-expired-policy", s.session_expired_policy,
            "--debug-endpoints",  # the nemesis expires sessions through it
        ]
        if s.mutants:
            command += ["--mutants", ",".join(s.mutants)]
        command += s.broker_args
        return LocalProcess(f"broker-{index}", command,
                            self.base_dir / f"broker-{index}" / "broker.log")

    @property
    def service_urls(self) -> list[str]:
        return [b.service_url for b in self.brokers]

    @property
    def admin_urls(self) -> list[str]:
        return [b.admin_url for b in self.brokers]

    def broker_at(self, url: str) -> BrokerNode:
        """The broker whose service URL or admin URL is `url`."""
        for broker in self.brokers:
            if url.rstrip("/") in (broker.service_url, broker.admin_url):
                return broker
        raise KeyError(f"no broker of this cluster at {url}")

    def processes(self) -> list[Node]:
        return [*self.bookies, *self.brokers]

    def start(self) -> None:
        """Start ZooKeeper, the bookies, then the brokers; return once all serve. On
        failure everything started is stopped and `NodeStartFailed` (or
        `ZooKeeperStartFailed`) raised."""
        timeout = self.settings.start_timeout
        try:
            self.zookeeper.start(timeout)
            for bookie in self.bookies:
                bookie.start()
            for bookie in self.bookies:
                bookie.wait_serving(timeout)
            for broker in self.brokers:
                broker.start()
            for broker in self.brokers:
                broker.wait_serving(timeout)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for node in [*self.brokers, *self.bookies]:
            node.stop()
        self.zookeeper.stop()

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
