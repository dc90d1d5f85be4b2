"""A WAN cut between two clusters in containers, during a failover scene: snapshots of
the replicated subscription stop while the clusters cannot hear each other and resume
after the heal, and the failover that follows loses nothing and repeats no more than
PIP-33's bound (the same as between local clusters, tests/geo/test_failover.py)."""

from __future__ import annotations

import time
from collections.abc import Callable

import pulsar
import pytest

from harness.target import TargetCluster
from harness.targets.docker.iptables import IptablesNetwork
from nemesis.partition import Partitioner
from tests.geo.failover import Scene, play, report
from tests.geo.geo_clusters import wait_until
from tests.geo_docker.conftest import GeoDeployment, completed_snapshots

pytestmark = [pytest.mark.docker, pytest.mark.cluster, pytest.mark.slow]

CUT_S = 5.0


class WanCut:
    """Once a's topic has completed snapshots, cut every node of a from every node of b
    for `CUT_S` seconds, then heal and wait for snapshots to complete again; the counts
    seen on the way are kept for the test to judge."""

    def __init__(self, partitioner: Partitioner, a: TargetCluster, b_nodes: list[str],
                 a_nodes: list[str], topic: str) -> None:
        self._partitioner = partitioner
        self._a = a
        self._sides = (a_nodes, b_nodes)
        self._topic = topic
        self.before_cut = self.soon_after_cut = self.end_of_cut = self.after_heal = -1

    def completed(self) -> int:
        return completed_snapshots(self._a, self._topic)

    def inject(self) -> None:
        wait_until("a completes snapshots", lambda: self.completed() >= 2)
        self.before_cut = self.completed()
        self._partitioner.cut_wan(*self._sides)
        time.sleep(1.5)  # a snapshot answered just before the cut may still complete
        self.soon_after_cut = self.completed()
        time.sleep(CUT_S - 1.5)
        self.end_of_cut = self.completed()
        self._partitioner.heal()
        wait_until("snapshots resume after the heal",
                   lambda: self.completed() > self.end_of_cut)
        self.after_heal = self.completed()

    def heal(self) -> None:
        self.lift()

    def lift(self) -> None:
        self._partitioner.heal()


def test_wan_cut_stops_snapshots_and_the_failover_after_the_heal_is_bounded(
        geo_deployment: Callable[..., GeoDeployment],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    geo = geo_deployment(["a", "b"])
    a, b = geo.clusters
    deployment = geo.deployment
    partitioner = Partitioner(IptablesNetwork(deployment.nodes))
    # 25 s of traffic; the consumer, 1.5 s behind, acknowledges until 2 s before the end,
    # well after snapshots resumed, so its last acknowledgements pass fresh snapshots.
    scene = Scene(source=a, target=b, producers=[a], messages_per_producer=500, rate=20,
                  acknowledge=440, consumer_lag_s=1.5)
    cut = WanCut(partitioner, a, [n.name for n in deployment.clusters["a"].nodes],
                 [n.name for n in deployment.clusters["b"].nodes], scene.topic)
    scene.fault = cut
    outcome = play(scene, pulsar_client, [a, b])
    report("WAN cut, then failover a -> b", outcome)
    print(f"completed snapshots: {cut.before_cut} before the cut, {cut.soon_after_cut} "
          f"1.5 s into it, {cut.end_of_cut} at its end, {cut.after_heal} after the heal")
    assert cut.soon_after_cut <= cut.before_cut + 1  # at most the one in flight
    assert cut.end_of_cut == cut.soon_after_cut
    assert cut.after_heal > cut.end_of_cut
    assert outcome.lost == set()
    assert outcome.duplicate_span_s() <= 2 * scene.snapshot_interval_s + 1.0
