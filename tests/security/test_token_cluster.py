"""A scenario's `auth = "token"` on local processes: the cluster starts with tokens
required and its ZooKeeper nodes closed, and the harness's presented token works."""

from __future__ import annotations

from pathlib import Path

import pulsar
import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from harness.admin_api import AdminError, admin_request
from harness.credentials import client_authentication, present
from harness.targets import deploy
from harness.topology import Topology

pytestmark = [pytest.mark.cluster, pytest.mark.zk]


def test_a_token_topology_guards_brokers_and_zookeeper(tmp_path: Path) -> None:
    target = deploy(Topology(brokers=1, backend="local", auth="token"), (), tmp_path)
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
    finally:
        target.stop()
        present(None)
