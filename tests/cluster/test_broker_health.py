"""A real broker's health check as the harness's probe reads it (`harness/health_probe.py`):
healthy while it serves; unhealthy once ZooKeeper stops answering; down once PIP-57's
retries are spent and it has shut down. Under `reconnect-retried-forever` it is still up,
answering unhealthy, well after a correct broker has gone: what `zombie-broker` judges."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from harness.health_probe import read_health
from harness.targets.local.cluster import LocalCluster

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(120)]

SESSION_TIMEOUT_S = 2.0
GONE_BY_S = 15.0
"""ZooKeeper stops answering at 0; the broker notices within a session timeout, counts it
lost after one more, and gives up after three more (`reconnect_retries`): about 10 s."""


def _answers_while_zookeeper_is_paused(cluster: LocalCluster, until_s: float) -> list[str]:
    """What the broker's health check answers, every 0.5 s, from before ZooKeeper freezes
    until it is down or `until_s` has passed."""
    url = cluster.brokers[0].admin_url
    answers = [read_health(url)["answer"]]
    cluster.zookeeper.pause(0)
    try:
        deadline = time.monotonic() + until_s
        while answers[-1] != "down" and time.monotonic() < deadline:
            time.sleep(0.5)
            answers.append(read_health(url)["answer"])
    finally:
        cluster.zookeeper.resume(0)
    return [a for n, a in enumerate(answers) if n == 0 or answers[n - 1] != a]


@pytest.mark.parametrize(("mutants", "seen"), [
    ((), ["healthy", "unhealthy", "down"]),
    (("reconnect-retried-forever",), ["healthy", "unhealthy"]),
], ids=["gives-up", "reconnect-retried-forever"])
def test_a_broker_cut_from_zookeeper_is_unhealthy_until_it_gives_up(
        make_cluster: Callable[..., LocalCluster], mutants: tuple[str, ...],
        seen: list[str]) -> None:
    cluster = make_cluster(brokers=1, session_timeout_ms=int(SESSION_TIMEOUT_S * 1000),
                           session_expired_policy="reconnect", mutants=mutants)
    assert _answers_while_zookeeper_is_paused(cluster, GONE_BY_S) == seen
