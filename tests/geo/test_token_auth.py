"""Geo-replication with token authentication on (docs/security.md): a broker presents the
token of `--broker-client-token-file` in its replicators' CONNECT to other clusters and on
the admin requests it makes itself (a partitioned topic's stats, gathered from its
partitions). Both clusters require tokens signed with one key; b's brokers have the flag,
a's do not. So b's messages reach a, while b refuses a's replicator (AuthenticationError)
and a's message waits in its backlog; and only b gathers partitioned stats."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pulsar
import pytest

from harness.admin_api import AdminError
from harness.credentials import client_authentication, present
from harness.targets.local.cluster import LocalCluster
from harness.targets.run_auth import RunAuth
from tests.geo.geo_clusters import NAMESPACE, admin, topic_stats, wait_until
from tests.geo.traffic import read_all

pytestmark = [pytest.mark.cluster]

AUTH = RunAuth("geo-replication-test-key")
CLIENT_TOKEN_FLAG = "--broker-client-token-file"
TOPIC = f"persistent://{NAMESPACE}/guarded"
PARTITIONED = f"/admin/v2/persistent/{NAMESPACE}/parts"


@pytest.fixture
def superuser() -> Iterator[None]:
    """The tests' clients and admin requests present the run's superuser token."""
    present(AUTH.credentials())
    yield
    present(None)


def _without_client_token(flags: tuple[str, ...]) -> tuple[str, ...]:
    at = flags.index(CLIENT_TOKEN_FLAG)
    return flags[:at] + flags[at + 2:]


def test_only_brokers_presenting_their_client_token_replicate(
        geo_clusters: Callable[..., list[LocalCluster]],
        pulsar_client: Callable[..., pulsar.Client], tmp_path: Path, superuser: None) -> None:
    flags = AUTH.local_broker_args(tmp_path)
    a, b = geo_clusters(["a", "b"], broker_args_of={"a": _without_client_token(flags),
                                                     "b": flags})
    client_a, client_b = (pulsar_client(c.service_urls[0],
                                        authentication=client_authentication())
                          for c in (a, b))
    client_b.create_producer(TOPIC).send(b"from b")
    client_a.create_producer(TOPIC).send(b"from a")

    wait_until("b's message left b", lambda: topic_stats(b, TOPIC)["replication"]["a"]
               ["msgOutCounter"] == 1)
    wait_until("b refused a's replicator", lambda: "AuthenticationError" in topic_stats(
        a, TOPIC)["replication"]["b"]["lastError"])
    refused = topic_stats(a, TOPIC)["replication"]["b"]
    assert not refused["connected"] and refused["msgOutCounter"] == 0
    assert refused["msgBacklog"] > 0
    assert sorted(read_all(client_a, TOPIC)) == ["from a", "from b"]
    assert read_all(client_b, TOPIC) == ["from b"]

    for cluster in (a, b):
        admin(cluster, "PUT", f"{PARTITIONED}/partitions", 2)
    assert admin(b, "GET", f"{PARTITIONED}/partitioned-stats")["metadata"] == {
        "partitions": 2}
    with pytest.raises(AdminError) as unauthenticated:
        admin(a, "GET", f"{PARTITIONED}/partitioned-stats")
    assert unauthenticated.value.status == 401
