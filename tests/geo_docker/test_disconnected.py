"""Why PIP-33 takes no snapshot while a replicator is disconnected, on clusters in
containers.

Three clusters, producers in a and b, the consumer in a. The WAN between a and b is cut
(packets dropped) while b keeps publishing, so b's messages reach c but not a. With a short
keep-alive, a's replicator to b soon knows it is cut. A correct controller then starts no
snapshot until b is back. The `snapshot-while-disconnected` mutant snapshots among the
clusters in reach, c alone: c's answer counts b's messages, a's consumer passes the
snapshot, and the update moves c's subscription past b's messages that a never delivered,
so the failover a -> c loses them."""

from __future__ import annotations

from collections.abc import Callable

import pulsar
import pytest

from harness.targets.docker.iptables import IptablesNetwork
from nemesis.partition import Partitioner
from tests.geo.failover import Outcome, Scene, play, report
from tests.geo.geo_clusters import replicator_connected, wait_until
from tests.geo_docker.conftest import GeoDeployment, completed_snapshots, holds_subscription

pytestmark = [pytest.mark.docker, pytest.mark.cluster, pytest.mark.slow]

KEEPALIVE_S = 1.0
"""a's replicator gives up its silent connection to b 2-3 s into the cut."""


class CutFromB:
    """Once c holds the subscription, cut a from b until the traffic is over; the completed
    snapshot counts when a's replicator noticed and at the end are kept for the test."""

    def __init__(self, geo: GeoDeployment, topic: str) -> None:
        self._partitioner = Partitioner(IptablesNetwork(geo.deployment.nodes))
        self._sides = [[node.name for node in geo.deployment.clusters[name].nodes]
                       for name in ("a", "b")]
        self._a, _, self._c = geo.clusters
        self._topic = topic
        self.when_noticed = self.at_end = -1

    def inject(self) -> None:
        wait_until("c holds the subscription", lambda: holds_subscription(self._c, self._topic))
        self._partitioner.cut_wan(*self._sides)
        wait_until("a's replicator to b notices the cut",
                   lambda: not replicator_connected(self._a, self._topic, "b"), timeout=15)
        self.when_noticed = completed_snapshots(self._a, self._topic)

    def heal(self) -> None:
        """The scene's end: the count the test judges, then a hears b again."""
        self.at_end = completed_snapshots(self._a, self._topic)
        self.lift()

    def lift(self) -> None:
        self._partitioner.heal()


def _failover_after_a_cut_from_b(geo_deployment: Callable[..., GeoDeployment],
                                 pulsar_client: Callable[..., pulsar.Client],
                                 mutants: tuple[str, ...]) -> tuple[Outcome, CutFromB]:
    geo = geo_deployment(["a", "b", "c"], mutants=mutants,
                         replication_keepalive_s=KEEPALIVE_S)
    a, b, c = geo.clusters
    # 20 s of traffic from a and b. The consumer in a keeps up with what arrives and stops
    # after as many messages as a alone publishes, about 16 s in: well after the cut
    # (about 3 s in) was noticed, and before the heal at the end of the traffic.
    scene = Scene(source=a, target=c, producers=[a, b], messages_per_producer=400, rate=20,
                  acknowledge=400)
    cut = CutFromB(geo, scene.topic)
    scene.fault = cut
    outcome = play(scene, pulsar_client, [a, b, c])
    label = ", ".join(mutants) or "correct"
    report(f"{label}: a cut from b while b published, failover a -> c", outcome)
    print(f"{label}: a had completed {cut.when_noticed} snapshots when its replicator "
          f"noticed the cut, {cut.at_end} when the traffic ended")
    return outcome, cut


def test_no_snapshot_while_b_is_cut_off_and_the_failover_loses_nothing(
        geo_deployment: Callable[..., GeoDeployment],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    outcome, cut = _failover_after_a_cut_from_b(geo_deployment, pulsar_client, ())
    assert cut.at_end == cut.when_noticed
    assert outcome.lost == set()


def test_mutant_snapshot_while_disconnected_loses_b_messages_after_failover(
        geo_deployment: Callable[..., GeoDeployment],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    outcome, cut = _failover_after_a_cut_from_b(
        geo_deployment, pulsar_client, ("snapshot-while-disconnected",))
    assert cut.at_end > cut.when_noticed
    assert outcome.lost
    assert all(message.startswith("b-") for message in outcome.lost)
