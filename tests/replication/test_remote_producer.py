"""The replicator's producer in a remote cluster: the remote's `brokerServiceUrl` may name
every broker of the cluster (`pulsar://h1:6650,h2:6650`, as the harness registers a
cluster), and each is tried in turn, so one broker down does not stop replication, as it
did while only the first broker was named."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

from harness.ports import free_ports
from impl.replication.remote_producer import RemoteProducer
from tests.broker.conftest import serving
from wire.connection import joined_service_url, service_urls


def test_a_multi_host_service_url_names_each_broker() -> None:
    assert service_urls("pulsar://h1:6650,h2:6651") == ["pulsar://h1:6650", "pulsar://h2:6651"]
    assert service_urls("pulsar+ssl://h:6651/") == ["pulsar+ssl://h:6651/"]
    assert joined_service_url(["pulsar://h1:6650", "pulsar://h2:6651/"]) == (
        "pulsar://h1:6650,h2:6651")


def test_the_remote_producer_reaches_the_cluster_past_a_broker_that_is_down() -> None:
    (down,) = free_ports(1, "127.0.0.1")
    with serving() as broker:
        url = joined_service_url([f"pulsar://127.0.0.1:{down}", broker.url])
        assert urlsplit(_connected_to(url)).port == urlsplit(broker.url).port


def _connected_to(url: str) -> str:
    """The broker a replicator's producer got to through `url`."""

    async def connect() -> str:
        producer = await RemoteProducer.connect(
            url, "persistent://public/default/replicated", "replicator-a", timeout=10)
        try:
            return producer.broker_url
        finally:
            await producer.close()

    return asyncio.run(connect())
