"""Targets starquake can start itself: the reference implementation as local processes
(`local.py`) or in containers (`docker.py`), chosen by a scenario's `topology.backend`."""

from __future__ import annotations

from pathlib import Path

from harness.credentials import present
from harness.target import Deployment
from harness.targets.run_auth import run_auth
from harness.topology import Topology


def deploy(topology: Topology, mutants: tuple[str, ...], run_dir: Path,
           lookup_service: bool = False) -> Deployment:
    """The Target `topology.backend` names, not yet started; with `lookup_service` it
    starts our lookup service too, over its first cluster. With the topology's `auth`, the
    harness presents the run's superuser token from now on."""
    auth = run_auth(topology)
    present(None if auth is None else auth.credentials())
    if topology.backend == "local":
        from harness.targets.local.target import LocalTarget

        return LocalTarget(topology, mutants, run_dir, lookup_service, auth)
    from harness.targets.docker.target import DockerTarget  # imports the docker SDK

    return DockerTarget(topology, mutants, run_dir, lookup_service, auth)

