"""Three real clusters with producers in each: a replicated subscription fails over from
one to another without losing any cluster's messages, and the snapshots it used took
PIP-33's two rounds."""

from __future__ import annotations

from collections.abc import Callable

import pulsar
import pytest

from harness.targets.local.cluster import LocalCluster
from tests.geo.failover import Scene, play, report
from tests.geo.geo_clusters import topic_stats

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_failover_among_three_clusters_loses_nothing_with_two_round_snapshots(
        geo_clusters: Callable[..., list[LocalCluster]],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    a, b, c = geo_clusters(["a", "b", "c"])
    # Five seconds of traffic, acknowledged at the producers' pace until the tenth second:
    # only acknowledgements after a completed snapshot send the updates the failover
    # needs, and on a loaded machine the first two-round snapshot may take seconds.
    scene = Scene(source=a, target=b, producers=[a, b, c], messages_per_producer=200,
                  rate=40, acknowledge=400, consumer_lag_s=0.5)
    outcome = play(scene, pulsar_client, [a, b, c])
    report("three clusters, failover a -> b", outcome)
    assert outcome.lost == set()
    controller = topic_stats(a, scene.topic)["replicatedSubscriptionsController"]
    assert controller["completedSnapshots"] > 0
    assert controller["lastSnapshotRounds"] == 2
