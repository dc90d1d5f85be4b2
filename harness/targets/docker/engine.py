"""The Docker engine connection and the labels that mark what starquake created.

Every container and network of a run carries `starquake=<run id>`; that label, not a name
pattern, is what teardown and `starquake cluster down` look for, so nothing the harness
did not create is ever removed (the idea of testcontainers' session label).
"""

from __future__ import annotations

import secrets
import time

import docker
import docker.errors
from docker import DockerClient

from history.errors import EnvironmentProblem

RUN_LABEL = "starquake"
"""Value: the run id. Present on every container and network of every run."""
CLUSTER_LABEL = "starquake.cluster"
ROLE_LABEL = "starquake.role"
"""`zookeeper`, `bookie`, `broker`, or NETNS_ROLE."""
NETNS_ROLE = "netns"
"""Role of the container that holds a node's network namespace (`containers.py`)."""
NODE_LABEL = "starquake.node"


class EngineUnavailable(EnvironmentProblem):
    """No Docker engine answers."""


def connect() -> DockerClient:
    """A client of the engine named by the usual DOCKER_HOST settings; raises
    EngineUnavailable with the engine's complaint when it does not answer."""
    try:
        client = docker.from_env()
        client.ping()
    except docker.errors.DockerException as exc:
        raise EngineUnavailable(
            f"no Docker engine answers ({exc}); start one (scripts/setup.sh does it as root)"
        ) from None
    return client


def new_run_id() -> str:
    """A short id that sorts by start time and is unique on one engine: it names
    containers and networks, so it stays within Docker's name alphabet."""
    return time.strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


def run_labels(run_id: str, **extra: str) -> dict[str, str]:
    """The labels of one object of run `run_id` (`cluster=`, `role=`, `node=` as given)."""
    labels = {RUN_LABEL: run_id}
    for key, value in extra.items():
        labels[f"{RUN_LABEL}.{key}"] = value
    return labels
