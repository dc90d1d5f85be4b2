"""The lookup service alone (a real process on a real ZooKeeper): it sends a client to the
cluster its tenant is assigned to, and refuses what it cannot place with the fact a user
needs. (With tokens and ZooKeeper credentials it runs in tests/security/test_token_cluster.py.)"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pulsar
import pytest

from harness.admin_api import AdminError, admin_request
from harness.targets.lookup import LookupService
from impl.lookup.__main__ import main as lookup_main

pytestmark = [pytest.mark.zk, pytest.mark.cluster]


def test_the_lookup_service_routes_tenants_and_refuses_unknown_ones(
        zk_connect_string: str, lookup_service: Callable[[str], LookupService],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    lookup = lookup_service(zk_connect_string)
    with pytest.raises(AdminError) as refused:
        admin_request(lookup.admin_url, "PUT", "/lookup/v2/tenants/t", {"cluster": "nowhere"})
    assert refused.value.status == 412
    with pytest.raises(AdminError) as missing:
        admin_request(lookup.admin_url, "GET", "/lookup/v2/tenants/t")
    assert missing.value.status == 404

    admin_request(lookup.admin_url, "PUT", "/lookup/v2/clusters/east",
                  {"brokerServiceUrl": "pulsar://127.0.0.1:1"})
    admin_request(lookup.admin_url, "PUT", "/lookup/v2/tenants/t", {"cluster": "east"})
    assert admin_request(lookup.admin_url, "GET", "/lookup/v2/tenants/t") == {
        "cluster": "east", "brokerServiceUrl": "pulsar://127.0.0.1:1"}

    client = pulsar_client(lookup.service_url, operation_timeout_seconds=3)
    with pytest.raises(pulsar.TopicNotFound):
        client.create_producer("persistent://unknown-tenant/ns/t")


def test_a_migration_is_refused_with_the_reason_before_any_step(
        zk_connect_string: str, lookup_service: Callable[[str], LookupService]) -> None:
    lookup = lookup_service(zk_connect_string)

    def refused(tenant: str, body: dict[str, object]) -> tuple[int, str]:
        with pytest.raises(AdminError) as error:
            admin_request(lookup.admin_url, "POST", f"/lookup/v2/tenants/{tenant}/migration",
                          body)
        return error.value.status, str(error.value)

    admin_request(lookup.admin_url, "PUT", "/lookup/v2/clusters/east",
                  {"brokerServiceUrl": "pulsar://127.0.0.1:1"})
    admin_request(lookup.admin_url, "PUT", "/lookup/v2/clusters/west",
                  {"brokerServiceUrl": "pulsar://127.0.0.1:2", "serviceUrl": "http://127.0.0.1:3"})
    admin_request(lookup.admin_url, "PUT", "/lookup/v2/tenants/t", {"cluster": "east"})

    assert refused("nobody", {"cluster": "west"})[0] == 404
    assert refused("t", {"cluster": "north"})[0] == 404
    assert refused("t", {"cluster": "east"})[0] == 409
    status, reason = refused("t", {"cluster": "west"})
    assert status == 412 and "no serviceUrl (admin API) for cluster east" in reason
    assert refused("t", {"cluster": "west", "timeoutSeconds": 0})[0] == 400
    with pytest.raises(AdminError) as none:
        admin_request(lookup.admin_url, "GET", "/lookup/v2/tenants/t/migration")
    assert none.value.status == 404
    # Nothing moved.
    assert admin_request(lookup.admin_url, "GET", "/lookup/v2/tenants/t")["cluster"] == "east"


def test_a_lookup_service_with_a_token_key_needs_superuser_roles(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        lookup_main(["--port", "1", "--admin-port", "2", "--zk", "127.0.0.1:1",
                     "--token-secret-key", str(tmp_path / "secret.key")])
    assert exited.value.code == 2
    assert "--token-secret-key needs --superuser-roles" in capsys.readouterr().err
