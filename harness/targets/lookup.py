"""Our lookup service (`python -m impl.lookup`) as part of a deployment: the migration
workload's clients use it as their service URL. It runs on this machine (on loopback),
keeps its records under a chroot of the first cluster's ZooKeeper, and sends clients on to
the clusters' brokers, which it reaches as the harness does, and moves tenants through
their admin APIs. With the run's authentication it checks tokens with the run's key, takes
changes from the superuser only, presents the brokers' client token to the clusters and
closes its ZooKeeper nodes with the run's digest (harness/targets/run_auth.py). The run's
mutants go to it as to every node (`migration-out-of-order` is its own)."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from harness.ports import free_ports
from harness.target import LookupEndpoint
from harness.targets.local.processes import LocalProcess, wait_serving
from harness.targets.run_auth import RunAuth
from harness.waits import http_answers
from history.errors import EnvironmentProblem

HOST = "127.0.0.1"
START_TIMEOUT_S = 30.0
CHROOT = "/lookup-service"


class LookupServiceFailed(EnvironmentProblem):
    """The lookup service did not come up; the message has the end of its log."""


class LookupService:
    """`zookeeper`: the connect string, chroot included; `args`: further flags (the
    run's credentials)."""

    def __init__(self, zookeeper: str, log_path: Path, args: tuple[str, ...] = ()) -> None:
        port, admin_port = free_ports(2, HOST)
        self.service_url = f"pulsar://{HOST}:{port}"
        self.admin_url = f"http://{HOST}:{admin_port}"
        self._process = LocalProcess("lookup", [
            sys.executable, "-m", "impl.lookup", "--port", str(port),
            "--admin-port", str(admin_port), "--zk", zookeeper, *args], log_path)

    def start(self) -> None:
        self._process.start()
        wait_serving(self._process, self._healthy, START_TIMEOUT_S, LookupServiceFailed)

    def _healthy(self) -> bool:
        return http_answers(f"{self.admin_url}/lookup/v2/health")

    def stop(self) -> None:
        self._process.stop()

    @property
    def endpoint(self) -> LookupEndpoint:
        return LookupEndpoint(self.service_url, self.admin_url)


class DeployedLookup:
    """The lookup service a deployment may run beside its clusters: started after them,
    stopped before them, its log in the run directory's `logs/lookup.log`; the run's
    credentials, if any, in a private directory of its own while it runs."""

    def __init__(self, wanted: bool, run_dir: Path, auth: RunAuth | None = None,
                 mutants: tuple[str, ...] = ()) -> None:
        self._wanted = wanted
        self._mutants = mutants
        self._log = run_dir / "logs" / "lookup.log"
        self._auth = auth
        self._credentials: Path | None = None
        self._service: LookupService | None = None

    def start(self, metadata_store: str | None) -> None:
        if not self._wanted:
            return
        if metadata_store is None:
            raise EnvironmentProblem("the lookup service needs the first cluster's "
                                     "metadata store, and the deployment offers none")
        self._log.parent.mkdir(parents=True, exist_ok=True)
        args: tuple[str, ...] = ("--mutants", ",".join(self._mutants))
        if self._auth is not None:
            self._credentials = Path(tempfile.mkdtemp(prefix="starquake-lookup-"))
            args += self._auth.local_lookup_args(self._credentials)
        self._service = LookupService(metadata_store + CHROOT, self._log, args)
        self._service.start()

    def stop(self) -> None:
        try:
            if self._service is not None:
                self._service.stop()
        finally:
            if self._credentials is not None:
                shutil.rmtree(self._credentials, ignore_errors=True)

    @property
    def endpoint(self) -> LookupEndpoint | None:
        return self._service.endpoint if self._service is not None else None
