"""The authentication probes (harness/workloads/contract/auth.py) against our brokers: all
pass where token authentication and authorization are on, and where a target claims them
but its brokers take anyone, the refusals the probes expect are caught as failures."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.credentials import present
from harness.targets.local.cluster import ClusterSettings, LocalCluster
from harness.targets.run_auth import RunAuth
from harness.workloads.contract import auth
from tests.run.contract_run import probe_outcomes, run_contract

pytestmark = [pytest.mark.cluster]

PROBES = set(auth.GROUPS[0].probes)
TOKEN_AUTH = RunAuth("a-test-secret-key")


def _cluster(directory: Path, broker_args: tuple[str, ...]) -> LocalCluster:
    return LocalCluster(directory, ClusterSettings(brokers=1, broker_args=broker_args))


@pytest.fixture
def claimed_credentials() -> Iterator[None]:
    """The harness presents the superuser's token, as for a target that requires one."""
    present(TOKEN_AUTH.credentials())
    yield
    present(None)


def _outcomes(cluster: LocalCluster, directory: Path) -> dict[str, str]:
    path, _took = run_contract(directory, cluster.service_urls, cluster.admin_urls,
                               auth.GROUPS, beside=())
    return probe_outcomes(path)


def test_every_probe_passes_on_brokers_with_authentication(
        tmp_path: Path, claimed_credentials: None) -> None:
    with _cluster(tmp_path / "cluster", TOKEN_AUTH.local_broker_args(tmp_path)) as cluster:
        outcomes = _outcomes(cluster, tmp_path / "run")
    assert outcomes == dict.fromkeys(PROBES, "ok")


def test_brokers_that_take_anyone_fail_the_refusal_probes(
        tmp_path: Path, claimed_credentials: None) -> None:
    with _cluster(tmp_path / "cluster", ()) as cluster:
        outcomes = _outcomes(cluster, tmp_path / "run")
    assert outcomes == {"token-admits": "ok", "no-token-refused": "fail",
                        "forged-token-refused": "fail", "admin-without-token-refused": "fail",
                        "unprivileged-cannot-produce": "fail"}
