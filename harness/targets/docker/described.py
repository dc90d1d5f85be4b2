"""A deployment of containers described as a target file: every node controlled through
its process container by name, as `starquake conform` controls a third party's containers."""

from __future__ import annotations

from harness.target import LookupEndpoint
from harness.targets.docker.deployment import DockerDeployment
from harness.targets.docker.target import cluster_of
from harness.targets.external.describe import target_file_text
from harness.topology import metadata_loss_shutdown_s


def described_deployment(deployment: DockerDeployment, lookup: LookupEndpoint | None) -> str:
    clusters = [cluster_of(nodes) for nodes in deployment.clusters.values()]
    controls = {node.name: {"control": "docker", "container": str(node.process.name)}
                for nodes in deployment.clusters.values() for node in nodes.nodes
                if node.role in ("zookeeper", "bookie", "broker")}
    session_timeout_s = deployment.settings.session_timeout_ms / 1000
    return target_file_text(
        f"reference-{deployment.run_id}", clusters, session_timeout_s, controls,
        header=f"Written by `starquake cluster up`: run {deployment.run_id}'s nodes, each "
               "controlled through\nits process container by name.",
        lookup=lookup, snapshot_timeout_s=deployment.settings.snapshot_timeout_s,
        metadata_loss_shutdown_s=metadata_loss_shutdown_s(
            deployment.topology.session_expired_policy, session_timeout_s))
