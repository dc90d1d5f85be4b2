"""A deployment of containers described as a target file: every node controlled through
its process container by name, as `starquake conform` controls a third party's containers."""

from __future__ import annotations

from dataclasses import dataclass

from harness.target import LookupEndpoint
from harness.targets.docker.deployment import DockerDeployment
from harness.targets.docker.target import cluster_of
from harness.targets.external.describe import target_file_text
from harness.topology import metadata_loss_shutdown_s


@dataclass(frozen=True)
class DescribedPromises:
    """The timeouts a target file states for the system the deployment runs, which depend
    on that system and its settings, not on the containers."""

    session_timeout_s: float
    snapshot_timeout_s: float
    metadata_loss_shutdown_s: float | None
    """None: the system promises no bound (the file leaves the key out)."""


def reference_promises(deployment: DockerDeployment) -> DescribedPromises:
    """Our reference brokers': the settings the deployment gave them, and the PIP-57
    shutdown bound they keep under the topology's policy."""
    session_timeout_s = deployment.settings.session_timeout_ms / 1000
    return DescribedPromises(
        session_timeout_s, deployment.settings.snapshot_timeout_s,
        metadata_loss_shutdown_s(deployment.topology.session_expired_policy,
                                 session_timeout_s))


def described_deployment(deployment: DockerDeployment, lookup: LookupEndpoint | None,
                         system: str, promises: DescribedPromises) -> str:
    """The target file of `deployment`, named `<system>-<run id>`."""
    clusters = [cluster_of(nodes) for nodes in deployment.clusters.values()]
    controls = {node.name: {"control": "docker", "container": str(node.process.name)}
                for nodes in deployment.clusters.values() for node in nodes.nodes
                if node.role in ("zookeeper", "bookie", "broker")}
    return target_file_text(
        f"{system}-{deployment.run_id}", clusters, promises.session_timeout_s, controls,
        header=f"Written by `starquake cluster up`: run {deployment.run_id}'s nodes, each "
               "controlled through\nits process container by name.",
        lookup=lookup, snapshot_timeout_s=promises.snapshot_timeout_s,
        metadata_loss_shutdown_s=promises.metadata_loss_shutdown_s)
