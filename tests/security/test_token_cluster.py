"""A scenario's `auth = "token"` on local processes: the cluster and its lookup service
start with tokens required and their ZooKeeper nodes closed, and the harness's presented
token works, for the official client and admin API as for scalable topics (PIP-468's
commands and admin API, and the broker's own Segments API calls that a split makes)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pulsar
import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from harness.admin_api import AdminError, admin_request
from harness.credentials import Credentials, client_authentication, present, presented
from harness.scalable_client.producer import ScalableProducer
from harness.scalable_client.stream_consumer import StreamConsumer
from harness.target import Deployment, LookupEndpoint
from harness.targets import deploy
from harness.targets.lookup import CHROOT
from harness.topology import Topology
from harness.workloads.scalable_admin import ScalableTopicAdmin
from harness.zk_inspect import NotAdmitted, children
from tests.scalable_cluster.workload import Received, wait_until
from tests.security.conftest import scalable_error, scalable_lookup, scalable_registration
from wire.connection import ClientConnection
from wire.errors import NotPermitted
from wire.pulsar_api_pb2 import BaseCommand, CommandScalableTopicClose, ServerError

pytestmark = [pytest.mark.cluster, pytest.mark.zk]

SCALABLE_TOPIC = "topic://public/default/guarded-scalable"


@pytest.fixture(scope="module")
def token_cluster(tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[tuple[Deployment, Credentials]]:
    """One broker and a lookup service with tokens required; the harness presents the
    superuser's token."""
    target = deploy(Topology(brokers=1, backend="local", auth="token"), (),
                    tmp_path_factory.mktemp("token-cluster"), lookup_service=True)
    try:
        target.start()
        credentials = presented()
        assert credentials is not None and credentials.unprivileged is not None
        yield target, credentials
    finally:
        target.stop()
        present(None)


def test_a_token_topology_guards_brokers_lookup_service_and_zookeeper(
        token_cluster: tuple[Deployment, Credentials]) -> None:
    target, _ = token_cluster
    cluster = target.clusters[0]
    client = pulsar.Client(cluster.service_url, operation_timeout_seconds=10,
                           authentication=client_authentication(),
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        client.create_producer("guarded").send(b"by the superuser")
    finally:
        client.close()
    assert "public" in admin_request(cluster.admin_urls[0], "GET", "/admin/v2/tenants")
    with pytest.raises(AdminError) as refused:
        admin_request(cluster.admin_urls[0], "GET", "/admin/v2/tenants", authenticated=False)
    assert refused.value.status == 401
    assert cluster.metadata_store is not None
    anonymous = KazooClient(hosts=cluster.metadata_store)
    anonymous.start(timeout=10)
    try:
        with pytest.raises(NoAuthError):
            anonymous.get("/a/admin/clusters/a")
    finally:
        anonymous.stop()
        anonymous.close()
    assert target.lookup is not None
    _lookup_service_is_guarded(target.lookup, cluster.service_url)
    with pytest.raises(NotAdmitted, match="--digest-file"):
        children(cluster.metadata_store + CHROOT, "/lookup/tenants")


def test_scalable_topics_take_the_superusers_token_and_refuse_others(
        token_cluster: tuple[Deployment, Credentials]) -> None:
    """The superuser's token creates, subscribes, produces, splits (the broker's own
    Segments API calls) and consumes across the split; no token is refused at CONNECT and
    the unprivileged role on commands 70 and 200, and its 72 cannot end another
    connection's session."""
    target, credentials = token_cluster
    cluster = target.clusters[0]
    url = cluster.service_urls[0]
    admin = ScalableTopicAdmin(cluster.admin_urls, SCALABLE_TOPIC)
    admin.create(1)
    admin.create_subscription("stream")
    with pytest.raises(AdminError) as refused:
        admin_request(cluster.admin_urls[0], "GET", "/admin/v2/scalable/public/default",
                      authenticated=False)
    assert refused.value.status == 401

    async def scenario() -> None:
        with pytest.raises(NotPermitted) as anonymous:
            await ClientConnection.open(url)
        assert anonymous.value.code == ServerError.AuthenticationError
        assert credentials.unprivileged is not None
        for command in (scalable_lookup(SCALABLE_TOPIC), scalable_registration(SCALABLE_TOPIC)):
            assert await scalable_error(url, credentials.unprivileged, command) == (
                ServerError.AuthorizationError), command.type

        received = Received()
        producer = await ScalableProducer([url], SCALABLE_TOPIC,
                                          token=credentials.token).start()
        consumer = await StreamConsumer([url], SCALABLE_TOPIC, "stream", "c", received,
                                        token=credentials.token).start()
        intruder = await ClientConnection.open(url, token=credentials.unprivileged)
        try:
            for n in range(10):
                await producer.send(f"k{n}", f"before-{n}".encode())
            for session_id in range(1, 20):  # whatever ids the producer's session took
                intruder.send(BaseCommand(type=BaseCommand.SCALABLE_TOPIC_CLOSE,
                                          scalableTopicClose=CommandScalableTopicClose(
                                              session_id=session_id)))
            assert (await asyncio.to_thread(admin.split, 0))["epoch"] == 1
            await producer.dag.wait_for(lambda d: d.layout is not None and d.layout.epoch == 1,
                                        timeout=30)
            for n in range(10):
                await producer.send(f"k{n}", f"after-{n}".encode())
            await wait_until(lambda: len(received.seen) == 20, 60, "all 20 messages",
                             lambda: f"got {sorted(received.seen)}")
        finally:
            intruder.close()
            await consumer.close()
            await producer.close()

    asyncio.run(scenario())


def _lookup_service_is_guarded(lookup: LookupEndpoint, broker_service_url: str) -> None:
    """Changes need the superuser's token, reads any role's; CONNECT needs a token."""
    credentials = presented()
    assert credentials is not None and credentials.unprivileged is not None
    assign = ("PUT", "/lookup/v2/clusters/a", {"brokerServiceUrl": broker_service_url})
    with pytest.raises(AdminError) as anonymous:
        admin_request(lookup.admin_url, *assign, authenticated=False)
    assert anonymous.value.status == 401
    assert "no credentials given" in str(anonymous.value)
    present(Credentials(credentials.unprivileged))
    try:
        with pytest.raises(AdminError) as unprivileged:
            admin_request(lookup.admin_url, *assign)
        assert unprivileged.value.status == 403
        assert "is not a superuser" in str(unprivileged.value)
        with pytest.raises(AdminError) as unknown:  # a read, allowed: the tenant is unknown
            admin_request(lookup.admin_url, "GET", "/lookup/v2/tenants/t")
        assert unknown.value.status == 404
    finally:
        present(credentials)
    admin_request(lookup.admin_url, *assign)
    admin_request(lookup.admin_url, "PUT", "/lookup/v2/tenants/t", {"cluster": "a"})
    assert admin_request(lookup.admin_url, "GET", "/lookup/v2/tenants/t")["cluster"] == "a"

    async def connect(token: str | None) -> None:
        connection = await ClientConnection.open(lookup.service_url, token=token)
        connection.close()

    with pytest.raises(NotPermitted) as refused:
        asyncio.run(connect(None))
    assert refused.value.code == ServerError.AuthenticationError
    asyncio.run(connect(credentials.token))
