"""The lookup service of document 003 (`python -m impl.lookup`) as a process of the run:
the migration workload's clients use it as their service URL. It runs on this machine
(on loopback), keeps its records under a chroot of the source cluster's ZooKeeper, and
sends clients on to the clusters' brokers, which it reaches as the harness does."""

from __future__ import annotations

import sys
import urllib.error
import urllib.request
from pathlib import Path

from harness.ports import free_ports
from harness.processes import LocalProcess, wait_serving
from history.errors import EnvironmentProblem

HOST = "127.0.0.1"
START_TIMEOUT_S = 30.0
CHROOT = "/lookup-service"


class LookupServiceFailed(EnvironmentProblem):
    """The lookup service did not come up; the message has the end of its log."""


class LookupService:
    def __init__(self, zookeeper: str, log_path: Path) -> None:
        port, admin_port = free_ports(2, HOST)
        self.service_url = f"pulsar://{HOST}:{port}"
        self.admin_url = f"http://{HOST}:{admin_port}"
        self._process = LocalProcess("lookup", [
            sys.executable, "-m", "impl.lookup", "--port", str(port),
            "--admin-port", str(admin_port), "--zk", zookeeper + CHROOT], log_path)

    def start(self) -> None:
        self._process.start()
        wait_serving(self._process, self._healthy, START_TIMEOUT_S, LookupServiceFailed)

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.admin_url}/lookup/v2/health",
                                        timeout=1.0) as response:
                return bool(response.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def stop(self) -> None:
        self._process.stop()
