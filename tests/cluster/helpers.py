"""What the cluster tests share: a module's cluster, asking a broker's admin API, finding a
topic's owner, and reading a consumer dry."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pulsar
import pytest

from harness.targets.local.cluster import BrokerNode, ClusterSettings, LocalCluster


def module_cluster(name: str, brokers: int) -> Callable[..., Any]:
    """A module-scoped `cluster` fixture: `brokers` brokers started once for the module's
    tests (each uses topics of its own), stopped after them."""
    @pytest.fixture(scope="module")
    def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
        with LocalCluster(Path(tmp_path_factory.mktemp(name)),
                          ClusterSettings(brokers=brokers)) as started:
            yield started
    return cluster


def admin_get(admin_url: str, path: str, timeout: float = 15.0) -> Any:
    """GET a JSON document (redirects to the owner are followed)."""
    with urllib.request.urlopen(f"{admin_url}{path}", timeout=timeout) as response:
        return json.loads(response.read())


def lookup_through(broker: BrokerNode, topic: str) -> str:
    """The owner's service URL, as `broker` answers an HTTP lookup (assigning a free
    bundle as a client's lookup would)."""
    local = topic.removeprefix("persistent://")
    return str(admin_get(broker.admin_url, f"/lookup/v2/topic/persistent/{local}")["brokerUrl"])


def owner_of(cluster: LocalCluster, topic: str, via: BrokerNode | None = None) -> BrokerNode:
    return cluster.broker_at(lookup_through(via or cluster.brokers[0], topic))


def drain(consumer: pulsar.Consumer, *, idle_ms: int = 2000, deadline: float = 60.0,
          ack: bool = True) -> list[pulsar.Message]:
    """Receive (and acknowledge) until nothing arrives for `idle_ms`."""
    got = []
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        try:
            message = consumer.receive(timeout_millis=idle_ms)
        except pulsar.Timeout:
            break
        got.append(message)
        if ack:
            consumer.acknowledge(message)
    return got


def backlog(admin_url: str, topic: str, subscription: str) -> int:
    local = topic.removeprefix("persistent://")
    stats = admin_get(admin_url, f"/admin/v2/persistent/{local}/stats")
    return int(stats["subscriptions"][subscription]["msgBacklog"])
