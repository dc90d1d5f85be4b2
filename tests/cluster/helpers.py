"""What the cluster tests share: a module's cluster, the admin application's routes, asking
a broker's admin API (as a client would, or raw), finding a topic's owner, and reading a
consumer dry."""

from __future__ import annotations

import http.client
import json
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import pulsar
import pytest

from harness.targets.local.cluster import BrokerNode, ClusterSettings, LocalCluster
from impl.admin.app import build_admin_app
from impl.admin.context import AdminContext


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


def admin_routes() -> list[tuple[str, str]]:
    """(method, path template) of every route the admin application serves (HEAD, which
    aiohttp adds for each GET, left out)."""
    app = build_admin_app(cast(AdminContext, None))  # the routes need no context
    return sorted({(route.method, route.resource.canonical) for route in app.router.routes()
                   if route.resource is not None and route.method != "HEAD"})


@dataclass
class Answer:
    status: int
    headers: http.client.HTTPMessage
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def send(admin_url: str, method: str, path: str, data: bytes | None = None,
         timeout: float = 15) -> Answer:
    """One request with `data` as it is, redirects not followed (a 307 is an answer)."""
    connection = http.client.HTTPConnection(urlsplit(admin_url).netloc, timeout=timeout)
    try:
        connection.request(method, path, body=data,
                           headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        return Answer(response.status, response.headers, response.read())
    finally:
        connection.close()


def call(admin_url: str, method: str, path: str, body: Any = None) -> Answer:
    """One request with `body` as JSON, redirects not followed."""
    return send(admin_url, method, path, None if body is None else json.dumps(body).encode())


def call_owner(admin_url: str, method: str, path: str, body: Any = None) -> Answer:
    """`call`, following a redirect to the topic's owner, as Pulsar's admin client does."""
    for _ in range(3):
        answer = call(admin_url, method, path, body)
        if answer.status != 307:
            return answer
        location = urlsplit(answer.headers["Location"])
        admin_url = f"{location.scheme}://{location.netloc}"
        path = f"{location.path}?{location.query}" if location.query else location.path
    raise AssertionError(f"{method} {path}: redirected three times")
