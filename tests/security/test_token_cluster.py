"""A scenario's `auth = "token"` on local processes: the cluster and its lookup service
start with tokens required and their ZooKeeper nodes closed, and the harness's presented
token works."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pulsar
import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from harness.admin_api import AdminError, admin_request
from harness.credentials import Credentials, client_authentication, present, presented
from harness.target import LookupEndpoint
from harness.targets import deploy
from harness.targets.lookup import CHROOT
from harness.topology import Topology
from harness.zk_inspect import NotAdmitted, children
from wire.connection import ClientConnection
from wire.errors import BrokerError
from wire.pulsar_api_pb2 import ServerError

pytestmark = [pytest.mark.cluster, pytest.mark.zk]


def test_a_token_topology_guards_brokers_lookup_service_and_zookeeper(tmp_path: Path) -> None:
    target = deploy(Topology(brokers=1, backend="local", auth="token"), (), tmp_path,
                    lookup_service=True)
    try:
        target.start()
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
            admin_request(cluster.admin_urls[0], "GET", "/admin/v2/tenants",
                          authenticated=False)
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
    finally:
        target.stop()
        present(None)


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

    with pytest.raises(BrokerError) as refused:
        asyncio.run(connect(None))
    assert refused.value.code == ServerError.AuthenticationError
    asyncio.run(connect(credentials.token))
