"""Fixtures of the geo-replication tests in containers: clusters of one ZooKeeper, one
bookie and one broker each, started by the container tests' `deploy` fixture (so removed
after the test by their run label) and linked for the test namespace through their admin
APIs, as an operator does it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.admin_api import AdminError
from harness.target import TargetCluster
from harness.targets.docker.deployment import DockerDeployment
from harness.targets.docker.node_specs import NodeSettings
from harness.workloads.geo_link import replicate_namespace
from tests.docker.conftest import deploy, docker_client  # noqa: F401  (fixtures)
from tests.geo.failover import SUBSCRIPTION
from tests.geo.geo_clusters import NAMESPACE, topic_stats


@dataclass(frozen=True)
class GeoDeployment:
    deployment: DockerDeployment
    clusters: list[TargetCluster]
    """In the order they were asked for; what the failover scene takes."""


@pytest.fixture
def geo_deployment(deploy: Callable[..., DockerDeployment],  # noqa: F811
                   tmp_path: Path) -> Callable[..., GeoDeployment]:
    """`geo_deployment(["a", "b"], mutants=(...))`: started clusters that replicate the
    test namespace to each other; `mutants` go to every node, `replication_keepalive_s`
    to every broker. Each node's log is saved in the test's `tmp_path/logs` at teardown."""

    def start(names: list[str], mutants: tuple[str, ...] = (),
              replication_keepalive_s: float = NodeSettings.replication_keepalive_s
              ) -> GeoDeployment:
        settings = NodeSettings(mutants=mutants,
                                replication_keepalive_s=replication_keepalive_s)
        deployment = deploy(clusters=tuple(names), zookeepers=1, bookies=1, brokers=1,
                            settings=settings, run_dir=tmp_path)
        clusters = [TargetCluster(n.name, tuple(n.service_urls), tuple(n.admin_urls),
                                  n.zk_connect_string)
                    for n in (deployment.clusters[name] for name in names)]
        replicate_namespace(clusters, NAMESPACE)
        return GeoDeployment(deployment, clusters)

    return start


def completed_snapshots(cluster: TargetCluster, topic: str) -> int:
    """How many PIP-33 snapshots `cluster`'s copy of `topic` has completed."""
    stats = topic_stats(cluster, topic).get("replicatedSubscriptionsController")
    return int(stats["completedSnapshots"]) if stats else 0


def holds_subscription(cluster: TargetCluster, topic: str) -> bool:
    """Whether an update marker (or a consumer) has made the scene's subscription in
    `cluster` yet."""
    try:
        return SUBSCRIPTION in topic_stats(cluster, topic)["subscriptions"]
    except AdminError as exc:
        if exc.status == 404:  # the topic reaches a cluster with its first replicated message
            return False
        raise
