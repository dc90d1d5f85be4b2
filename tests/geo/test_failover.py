"""Consumer failover between two real clusters with a replicated subscription (PIP-33):
nothing is lost, duplicates stay within about one snapshot interval, and our document-003
extension cuts the duplicates that out-of-order acknowledgements leave."""

from __future__ import annotations

from collections.abc import Callable

import pulsar
import pytest

from harness.targets.local.cluster import LocalCluster
from tests.geo.failover import Scene, play, report

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

EXTENSION = "--replicate-individually-deleted"


def _scene(a: LocalCluster, b: LocalCluster) -> Scene:
    """The consumer in a runs 1.5 s behind the producer and stops after 150 messages: it
    has read snapshots beyond what it acknowledged, and its subscription reached b with
    the first snapshot it passed."""
    return Scene(source=a, target=b, producers=[a], consumer_lag_s=1.5, acknowledge=150)


def test_failover_loses_nothing_and_repeats_about_one_snapshot_interval(
        geo_clusters: Callable[..., list[LocalCluster]],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    a, b = geo_clusters(["a", "b"])
    scene = _scene(a, b)
    outcome = play(scene, pulsar_client, [a, b])
    report("PIP-33 failover a -> b", outcome)
    assert outcome.lost == set()
    assert outcome.duplicates, "a failover without duplicates means no snapshot lagged"
    # One snapshot interval, plus the timer's phase and replication lag on a busy machine.
    assert outcome.duplicate_span_s() <= 2 * scene.snapshot_interval_s + 1.0


@pytest.mark.parametrize("mutant", ["update-past-mark-delete", "update-creates-at-latest"])
def test_mutant_loses_messages_after_failover(
        mutant: str, geo_clusters: Callable[..., list[LocalCluster]],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    a, b = geo_clusters(["a", "b"], mutants=(mutant,))
    outcome = play(_scene(a, b), pulsar_client, [a, b])
    report(f"{mutant} a -> b", outcome)
    assert outcome.lost


def _failover_with_a_hole(geo_clusters: Callable[..., list[LocalCluster]],
                          pulsar_client: Callable[..., pulsar.Client],
                          broker_args: tuple[str, ...]) -> int:
    a, b = geo_clusters(["a", "b"], broker_args=broker_args)
    scene = Scene(source=a, target=b, producers=[a], hole="a-150", acknowledge=280)
    outcome = play(scene, pulsar_client, [a, b])
    report(f"failover with an unacknowledged message, broker flags {list(broker_args)}",
           outcome)
    assert outcome.lost == set()
    return len(outcome.duplicates)


def test_replicating_individual_acknowledgements_cuts_duplicates_after_failover(
        geo_clusters: Callable[..., list[LocalCluster]],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    plain = _failover_with_a_hole(geo_clusters, pulsar_client, ())
    extended = _failover_with_a_hole(geo_clusters, pulsar_client, (EXTENSION,))
    print(f"duplicates after failover: PIP-33 {plain}, with {EXTENSION} {extended}")
    assert extended < plain
