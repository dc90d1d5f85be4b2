"""Three clusters in containers, and one replication link stalled: b's replicator to a
hangs while every other link works, so b's messages reach c but not a, and b's answers to
a's snapshot requests never arrive. A correct snapshot in a waits for every cluster's
answer, so none completes during the stall and a failover a -> c loses nothing. The
`partial-snapshot` mutant completes with c's answer alone; the update that follows moves
c's subscription past b's messages that a never had, and the failover loses them."""

from __future__ import annotations

import time
from collections.abc import Callable

import pulsar
import pytest

from harness.target import TargetCluster
from harness.targets.docker.deployment import DockerDeployment
from harness.targets.docker.iptables import IptablesNetwork
from harness.targets.docker.node_specs import BROKER_PORT
from nemesis.partition import Partitioner
from tests.docker.conftest import reachable
from tests.geo.failover import Outcome, Scene, play, report
from tests.geo.geo_clusters import wait_until
from tests.geo_docker.conftest import GeoDeployment, completed_snapshots, holds_subscription

pytestmark = [pytest.mark.docker, pytest.mark.cluster, pytest.mark.slow]


class StalledLink:
    """Once c holds the replicated subscription (a snapshot completed and a's consumer
    passed it), a's broker drops what b's broker sends to its service port: b's replicator
    to a stalls, a's replicator to b does not. Lifted when the traffic is over."""

    def __init__(self, deployment: DockerDeployment, partitioner: Partitioner,
                 a: TargetCluster, c: TargetCluster, topic: str) -> None:
        self._deployment = deployment
        self._partitioner = partitioner
        self._a, self._c = a, c
        self._topic = topic
        self.at_stall = self.before_heal = -1
        self._created = time.monotonic()
        self.stalled_after_s = 0.0

    def completed(self) -> int:
        return completed_snapshots(self._a, self._topic)

    def inject(self) -> None:
        wait_until("c holds the subscription", lambda: holds_subscription(self._c, self._topic))
        self._partitioner.stall_port("b-broker1", "a-broker1", BROKER_PORT)
        self.at_stall = self.completed()
        self.stalled_after_s = time.monotonic() - self._created
        self._check_only_b_to_a_stalls()

    def _check_only_b_to_a_stalls(self) -> None:
        image = self._deployment.image
        assert image is not None
        brokers = {name: self._deployment.node(f"{name}-broker1") for name in "abc"}
        services = {name: f"{node.advertised_ip}:{BROKER_PORT}"
                    for name, node in brokers.items()}
        assert reachable(image, brokers["b"], services) == {"b", "c"}
        assert reachable(image, brokers["a"], services) == {"a", "b", "c"}
        assert reachable(image, brokers["c"], services) == {"a", "b", "c"}

    def heal(self) -> None:
        self.before_heal = self.completed()
        self.lift()

    def lift(self) -> None:
        self._partitioner.heal()


def _failover_with_b_to_a_stalled(geo_deployment: Callable[..., GeoDeployment],
                                  pulsar_client: Callable[..., pulsar.Client],
                                  mutants: tuple[str, ...]) -> tuple[Outcome, StalledLink]:
    geo = geo_deployment(["a", "b", "c"], mutants=mutants)
    a, b, c = geo.clusters
    partitioner = Partitioner(IptablesNetwork(geo.deployment.nodes))
    # 20 s of traffic from a and b. The consumer in a keeps up with what arrives (it
    # passes each snapshot as soon as it is written) and stops after as many messages as
    # a alone publishes, so it never starves. Before the stall a receives 40 messages/s,
    # during it 20: a stall beginning t s into the traffic leaves 20 - 2t s of
    # acknowledgements (and snapshots) within it, many even under load (t is seen at 1.5-2.5).
    scene = Scene(source=a, target=c, producers=[a, b], messages_per_producer=400, rate=20,
                  acknowledge=400)
    stall = StalledLink(geo.deployment, partitioner, a, c, scene.topic)
    scene.fault = stall
    outcome = play(scene, pulsar_client, [a, b, c])
    label = ", ".join(mutants) or "correct snapshots"
    report(f"{label}: b -> a stalled, failover a -> c", outcome)
    print(f"{label}: stalled {stall.stalled_after_s:.1f} s into the scene; a completed "
          f"{stall.at_stall} snapshots before the stall, "
          f"{stall.before_heal} by its end")
    return outcome, stall


def test_a_snapshot_waits_for_the_stalled_cluster_and_the_failover_loses_nothing(
        geo_deployment: Callable[..., GeoDeployment],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    outcome, stall = _failover_with_b_to_a_stalled(geo_deployment, pulsar_client, ())
    assert stall.before_heal <= stall.at_stall + 1  # at most the one in flight
    assert outcome.lost == set()


def test_mutant_partial_snapshot_loses_b_messages_after_failover(
        geo_deployment: Callable[..., GeoDeployment],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    outcome, stall = _failover_with_b_to_a_stalled(geo_deployment, pulsar_client,
                                                   ("partial-snapshot",))
    assert stall.before_heal > stall.at_stall + 1
    assert outcome.lost
    assert all(key.startswith("b-") for key in outcome.lost)
