"""Targets starquake can start itself: the deployment of the backend a scenario's
`topology.backend` names, one of harness/backends.py (each backend's package sits beside
this module)."""

from __future__ import annotations

from pathlib import Path

from harness.backends import backend
from harness.credentials import present
from harness.target import Deployment
from harness.targets.run_auth import run_auth
from harness.topology import Topology


def deploy(topology: Topology, mutants: tuple[str, ...], run_dir: Path,
           lookup_service: bool = False) -> Deployment:
    """The Target `topology.backend` names, not yet started (`with deploy(...) as target:`
    starts it and tears it down); with `lookup_service` it starts our lookup service too,
    over its first cluster. With the topology's `auth`, the harness presents the run's
    superuser token from now on. Raises UnknownBackend for a name harness/backends.py does
    not know."""
    chosen = backend(topology.backend)
    auth = run_auth(topology)
    present(None if auth is None else auth.credentials())
    return chosen.deployment_class()(topology, mutants, run_dir, lookup_service, auth)
