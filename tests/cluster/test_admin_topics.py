"""The admin API's topic endpoints on a real broker: stats that include the front end's
clients, terminate, unload, delete (refused while clients are connected); a terminated
topic's drained consumer costs its broker nothing."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pulsar
import pytest

from harness.targets.local.cluster import LocalCluster
from tests.cluster.helpers import admin_get, drain, owner_of

pytestmark = pytest.mark.cluster

TOPIC = "persistent://public/default/administered"
PATH = "/admin/v2/persistent/public/default/administered"


def admin_call(admin_url: str, method: str, path: str) -> tuple[int, Any]:
    request = urllib.request.Request(f"{admin_url}{path}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=15) as response:
            body = response.read()
            return response.status, json.loads(body) if body else None
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def test_topic_stats_terminate_unload_and_delete(
        make_cluster: Callable[..., LocalCluster],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    cluster = make_cluster(brokers=2)
    owner = owner_of(cluster, TOPIC)
    client = pulsar_client(cluster.service_urls[0])
    consumer = client.subscribe(TOPIC, "sub", consumer_name="reader-1")
    producer = client.create_producer(TOPIC, producer_name="writer-1", batching_enabled=False)
    for n in range(5):
        producer.send(f"{n}".encode())

    stats = admin_get(owner.admin_url, f"{PATH}/stats")
    assert [p["producerName"] for p in stats["publishers"]] == ["writer-1"]
    subscription = stats["subscriptions"]["sub"]
    assert subscription["type"] == "Exclusive" and subscription["msgBacklog"] == 5
    assert [c["consumerName"] for c in subscription["consumers"]] == ["reader-1"]

    status, _ = admin_call(owner.admin_url, "DELETE", PATH)
    assert status == 409  # clients are connected

    assert admin_call(owner.admin_url, "PUT", f"{PATH}/unload")[0] == 204
    written = producer.send(b"after unload")  # the client looked the topic up again
    assert len(drain(consumer)) == 6

    status, last = admin_call(owner.admin_url, "POST", f"{PATH}/terminate")
    assert status == 200
    assert (last["ledgerId"], last["entryId"]) == (written.ledger_id(), written.entry_id())
    with pytest.raises(pulsar.TopicTerminated):
        producer.send(b"too late")
    assert admin_get(owner.admin_url, f"{PATH}/internalStats")["state"] == "Terminated"

    consumer.close()  # the producer is closed already: the client closes it on termination
    assert admin_call(owner.admin_url, "DELETE", PATH)[0] == 204
    assert TOPIC not in admin_get(owner.admin_url, "/admin/v2/persistent/public/default")


def _cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_terminated_topic_with_a_drained_consumer_leaves_its_broker_idle(
        make_cluster: Callable[..., LocalCluster],
        pulsar_client: Callable[..., pulsar.Client]) -> None:
    """A sealed segment whose consumers read everything is the normal state after every
    split: its dispatcher once spun on the event loop there, and the broker, at 100% CPU,
    timed out the next merge."""
    cluster = make_cluster(brokers=1)
    owner = cluster.brokers[0]
    client = pulsar_client(owner.service_url)
    consumer = client.subscribe(TOPIC, "sub")
    producer = client.create_producer(TOPIC, batching_enabled=False)
    for n in range(5):
        producer.send(f"{n}".encode())
    assert admin_call(owner.admin_url, "POST", f"{PATH}/terminate")[0] == 200
    assert len(drain(consumer)) == 5
    assert owner.pid is not None
    before = _cpu_seconds(owner.pid)
    time.sleep(3)
    # An idle broker uses a few hundredths of a second here; the spin used all it could get.
    assert _cpu_seconds(owner.pid) - before < 0.5
    consumer.close()
