"""A short run of `starquake bench fuzz`'s campaign: a few thousand spoiled frames leave
the broker alive, answering, within a memory bound, its log free of tracebacks, and the
official client working and reading every fuzzed topic to its end; the report says what
the broker refused: SENDs whose metadata contradicts itself among them."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from harness.targets.local.cluster import LocalCluster
from starquake.bench.fuzz import ROUND_TRIPS, run_fuzz

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

RSS_GROWTH_BOUND_MIB = 100


def test_a_short_fuzzing_campaign_leaves_the_broker_sound(
        make_cluster: Callable[..., LocalCluster]) -> None:
    cluster = make_cluster(brokers=1)
    broker = cluster.brokers[0]
    result = run_fuzz(broker.service_url, lambda: broker.pid, frames=4000, seconds=60,
                      seed=11)
    assert result.frames >= 4000
    assert (result.crashes, result.hangs) == (0, 0)
    assert result.rss_growth_mib < RSS_GROWTH_BOUND_MIB
    assert result.round_trips == ROUND_TRIPS
    assert result.refusals["SEND_ERROR MetadataError"] > 0
    assert result.refusals["connection closed"] > 0
    assert len(result.topic_reads) == 4 and None not in result.topic_reads.values()
    assert result.passed
    log = (cluster.base_dir / "broker-0" / "broker.log").read_text()
    assert "Traceback" not in log
