"""The backends: the ways starquake deploys a system as a `Deployment` it starts and stops
itself, each declared once here with the capabilities its nodes offer and the class that
deploys it.

Everything that needs a backend's name or capabilities reads `BACKENDS`: the scenario
format (`topology.backend`), the command line's `--backend` choices, the nodes a schedule
is planned over (harness/topology.py) and `harness.targets.deploy`. Adding a backend is a
module holding its Deployment and one line in `BACKENDS` (docs/architecture.md, "Adding a
backend").

Import-light on purpose: the command line reads the names for `--help`, so a backend's
module (for containers, the docker SDK) is imported only when a run deploys it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from harness.target import Capability, Deployment
from history.errors import BadInput

if TYPE_CHECKING:
    from harness.targets.run_auth import RunAuth
    from harness.topology import Topology


class UnknownBackend(BadInput):
    """A topology names a backend that is not in `BACKENDS`."""


class DeploymentClass(Protocol):
    """How a backend's Deployment is made: not started yet, from the topology, the run's
    mutants and directory, whether to start our lookup service too, and the run's
    authentication (None: none)."""

    def __call__(self, topology: Topology, mutants: tuple[str, ...], run_dir: Path,
                 lookup_service: bool, auth: RunAuth | None) -> Deployment: ...


@dataclass(frozen=True)
class Backend:
    """One way of deploying: its name (a scenario's `topology.backend`), what it offers
    the nemesis, and its Deployment."""

    name: str
    summary: str
    """What it deploys, for `--help`."""
    capabilities: frozenset[Capability]
    """What the nemesis may do to each of its nodes."""
    deployment: str
    """`module:Class` of its Deployment (a `DeploymentClass`), imported only to deploy."""
    on_loopback: bool = False
    """Its nodes are processes on this machine's loopback, rather than hosts reached by
    their node names (containers on a network of their own)."""
    unsupported_workloads: frozenset[str] = frozenset()
    """Workloads its system cannot run (PIP-468 and our lookup service are our reference
    implementation's): `starquake explore` draws none of them for it."""
    shared_replication_list: bool = False
    """Its clusters share one list of the clusters each namespace replicates to (Pulsar's
    configuration store), where ours keep one each. Dropping a cluster from a shared
    list makes that cluster delete the namespace's topics, so no single cluster can stop
    replicating to one other: `unlink-replication` is refused there."""
    reference_brokers: bool = True
    """Its brokers are our reference implementation's, which read the topology settings
    only they have (`REFERENCE_BROKER_SETTINGS`); other brokers keep their own defaults
    there, so a scenario that sets one is refused and explore draws none."""

    def deployment_class(self) -> DeploymentClass:
        module, _, name = self.deployment.partition(":")
        return cast(DeploymentClass, getattr(importlib.import_module(module), name))


BACKENDS: dict[str, Backend] = {backend.name: backend for backend in (
    Backend("docker", "our implementation in containers",
            frozenset({"kill", "pause", "partition", "cut-clients", "session-debug"}),
            "harness.targets.docker.target:DockerTarget"),
    # Processes share the loopback interface, so they cannot be partitioned.
    Backend("local", "our implementation as local processes",
            frozenset({"kill", "pause", "session-debug"}),
            "harness.targets.local.target:LocalTarget", on_loopback=True),
    # No session-debug: Pulsar's brokers do not publish their ZooKeeper session.
    Backend("apache-pulsar", "Apache Pulsar's official distribution in containers",
            frozenset({"kill", "pause", "partition", "cut-clients"}),
            "harness.targets.apache_pulsar.target:ApachePulsarTarget",
            unsupported_workloads=frozenset({"scalable", "migration", "auth"}),
            shared_replication_list=True, reference_brokers=False),
)}


def backend(name: str) -> Backend:
    """The backend called `name`; raises UnknownBackend naming the known ones."""
    try:
        return BACKENDS[name]
    except KeyError:
        raise UnknownBackend(f"no backend is called {name!r}; the backends: "
                             f"{', '.join(BACKENDS)}") from None


def backends_help() -> str:
    """The backends for a command's `--help`."""
    return "; ".join(f"{b.name}: {b.summary}" for b in BACKENDS.values())
