"""The networks of a deployment: one bridge per cluster, and a WAN bridge joining the
clusters when there are several.

Every network is `internal`: the engine neither routes it to the outside world nor
masquerades it, so the system under test can talk only to itself and to this machine (the
host keeps an address on each bridge, which is how clients running here reach the nodes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import docker.errors
from docker import DockerClient
from docker.models.networks import Network

from harness.targets.docker.engine import run_labels
from history.errors import BadInput, EnvironmentProblem

WAN = "wan"


class NetworkCreateFailed(EnvironmentProblem):
    """The engine would not create a network (address pools exhausted, say)."""


@dataclass(frozen=True)
class DeploymentNetworks:
    clusters: dict[str, Network]
    wan: Network | None

    def of(self, cluster: str) -> list[Network]:
        """The networks a node of `cluster` joins, its own cluster's first."""
        return [self.clusters[cluster], *([self.wan] if self.wan is not None else [])]


def _create(client: DockerClient, run_id: str, name: str) -> Network:
    try:
        return client.networks.create(f"sq-{run_id}-{name}", driver="bridge", internal=True,
                                      labels=run_labels(run_id, network=name),
                                      check_duplicate=True)
    except docker.errors.APIError as exc:
        raise NetworkCreateFailed(f"could not create network {name} of run {run_id}: "
                                  f"{exc.explanation or exc}; `starquake cluster ls` shows "
                                  "runs still holding networks") from None


def create_networks(client: DockerClient, run_id: str,
                    clusters: Sequence[str]) -> DeploymentNetworks:
    """One network per cluster, plus the WAN when there are two or more clusters."""
    if WAN in clusters:
        raise BadInput(f"cluster name {WAN!r} is taken by the network between clusters")
    own = {cluster: _create(client, run_id, cluster) for cluster in clusters}
    return DeploymentNetworks(own, _create(client, run_id, WAN) if len(clusters) > 1 else None)
