"""Fixtures of the geo-replication tests: several real clusters (each with its own
ZooKeeper, bookie and broker) started side by side and linked for one namespace."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from harness.local_cluster import ClusterSettings, LocalCluster
from tests.fixtures.cluster import pulsar_client  # noqa: F401  (a fixture)
from tests.geo.geo_clusters import link


@pytest.fixture
def geo_clusters(tmp_path: Path) -> Iterator[Callable[..., list[LocalCluster]]]:
    """`geo_clusters(["a", "b"], **ClusterSettings fields)`: started, linked clusters with
    one broker each; all stopped after the test, also on failure."""
    started: list[LocalCluster] = []

    def start(names: list[str], **settings: Any) -> list[LocalCluster]:
        settings.setdefault("brokers", 1)
        clusters = [LocalCluster(tmp_path / f"{len(started) + i}-{name}",
                                 ClusterSettings(name=name, **settings))
                    for i, name in enumerate(names)]
        started.extend(clusters)
        with ThreadPoolExecutor(len(clusters)) as pool:
            for done in [pool.submit(c.start) for c in clusters]:
                done.result()
        link(clusters)
        return clusters

    yield start
    for cluster in started:
        cluster.stop()
