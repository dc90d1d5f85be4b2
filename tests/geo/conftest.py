"""Fixtures of the geo-replication tests: several real clusters (each with its own
ZooKeeper, bookie and broker) started side by side, and the lookup service of document
003's tenant migration as a real process."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from harness.targets.local.cluster import ClusterSettings, LocalCluster
from harness.targets.lookup import LookupService
from tests.fixtures.cluster import pulsar_client  # noqa: F401  (a fixture)
from tests.geo.geo_clusters import link


@pytest.fixture
def geo_clusters(tmp_path: Path) -> Iterator[Callable[..., list[LocalCluster]]]:
    """`geo_clusters(["a", "b"], linked=True, broker_args_of={}, **ClusterSettings
    fields)`: started clusters with one broker each, linked for the test namespace unless
    `linked=False`; `broker_args_of` gives one cluster's brokers their own flags. All are
    stopped after the test, also on failure."""
    started: list[LocalCluster] = []

    def start(names: list[str], linked: bool = True,
              broker_args_of: Mapping[str, tuple[str, ...]] = MappingProxyType({}),
              **settings: Any) -> list[LocalCluster]:
        settings.setdefault("brokers", 1)

        def settings_of(name: str) -> ClusterSettings:
            own = {"broker_args": broker_args_of[name]} if name in broker_args_of else {}
            return ClusterSettings(name=name, **{**settings, **own})

        clusters = [LocalCluster(tmp_path / f"{len(started) + i}-{name}", settings_of(name))
                    for i, name in enumerate(names)]
        started.extend(clusters)
        with ThreadPoolExecutor(len(clusters)) as pool:
            for done in [pool.submit(c.start) for c in clusters]:
                done.result()
        if linked:
            link(clusters)
        return clusters

    yield start
    for cluster in started:
        cluster.stop()


@pytest.fixture
def lookup_service(tmp_path: Path) -> Iterator[Callable[..., LookupService]]:
    """`lookup_service(zk_connect_string, *flags)`: a started `python -m impl.lookup`,
    stopped after the test."""
    services: list[LookupService] = []

    def start(zk: str, *flags: str) -> LookupService:
        service = LookupService(zk, tmp_path / "lookup" / f"lookup-{len(services)}.log", flags)
        services.append(service)
        service.start()
        return service

    yield start
    for service in services:
        service.stop()
