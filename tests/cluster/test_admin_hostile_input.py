"""Every admin route, asked with bodies and path values no client should send: each answer
is a 4xx with a reason (or what the route answers anyway: a redirect, 503 without a part),
never a 500; and `ownedNamespaces` redirects only to a live broker of the cluster."""

from __future__ import annotations

import http.client
import re
from typing import cast
from urllib.parse import urlsplit

import pytest

from harness.targets.local.cluster import LocalCluster
from impl.admin.app import build_admin_app
from impl.admin.context import AdminContext
from tests.cluster.helpers import module_cluster

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(300)]

BODIES = [b"", b"{", b"[]", b"null", b"-1", b"1e308", b'"text"', b"9" * 400,
          b'{"bundles": {"numBundles": 100000000}}', b'{"bundles": {"numBundles": -3}}',
          b'{"bundles": {"boundaries": ["0x0", "zz"]}}', b'{"replication_clusters": 5}',
          b'{"message_ttl_in_seconds": "soon", "retention_policies": 7}',
          b'{"allowedClusters": 3, "adminRoles": [1]}', b'{"partitions": 1e18}',
          b'{"ledgerId": -1, "entryId": "x"}', b'{"type": 12, "schema": []}']
"""Bad JSON, wrong types, huge and negative numbers, and an empty body."""
PATH_VALUES = [
    {"tenant": "hostile", "namespace": "ns", "name": "t", "subscription": "s",
     "cluster": "standalone", "broker": "127.0.0.1:1", "bundle": "0x00000000_0xffffffff",
     "version": "0", "segment_id": "0", "second_id": "1", "messagePosition": "1",
     "timestamp": "0", "messageId": "1:0", "numMessages": "1", "partition": "0",
     "property": "p", "ledgerId": "1", "entryId": "0"},
    {"tenant": "hostile", "namespace": "ns", "name": "t", "subscription": "s",
     "cluster": "x", "broker": "evil.example:80", "bundle": "0xzz_0x1",
     "version": "-1", "segment_id": "99999999999999999999999", "second_id": "-5",
     "messagePosition": "-1", "timestamp": "1e99", "messageId": "a:b",
     "numMessages": "-9", "partition": "-1", "property": "", "ledgerId": "x",
     "entryId": "18446744073709551616"},
]
QUERIES = ["", "?authoritative=maybe&force=2&partitions=-1&timestamp=x&messagePosition=-3"]
DELIBERATE = {501, 503}
"""What a route answers whatever the input: not implemented here, a part not running."""
PLACEHOLDER = re.compile(r"\{(\w+)(?::[^}]*)?\}")


def admin_routes() -> list[tuple[str, str]]:
    """(method, path template) of every route the admin app serves."""
    app = build_admin_app(cast(AdminContext, None))
    routes = {(route.method, route.resource.canonical) for route in app.router.routes()
              if route.resource is not None and route.method in {"GET", "PUT", "POST",
                                                                   "DELETE"}}
    return sorted(routes, key=lambda r: (r[0] == "DELETE", r[1], r[0]))


def _request(netloc: str, method: str, path: str, body: bytes) -> tuple[int, bytes, str]:
    connection = http.client.HTTPConnection(netloc, timeout=5)
    try:
        connection.request(method, path, body=body or None,
                           headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, response.read(), response.headers.get("Location", "")
    finally:
        connection.close()


cluster = module_cluster("admin-hostile", brokers=1)


def test_no_admin_route_answers_bad_input_with_a_server_error(cluster: LocalCluster) -> None:
    netloc = urlsplit(cluster.brokers[0].admin_url).netloc
    assert _request(netloc, "PUT", "/admin/v2/tenants/hostile",
                    b'{"allowedClusters": ["standalone"]}')[0] < 300
    _request(netloc, "PUT", "/admin/v2/namespaces/hostile/ns", b"")
    failures: set[str] = set()
    asked = 0
    for method, template in admin_routes():
        for values in PATH_VALUES:
            path = PLACEHOLDER.sub(lambda m, v=values: v.get(m.group(1), "x"), template)
            for query in QUERIES:
                for body in BODIES if method in {"PUT", "POST"} else [b""]:
                    try:
                        status, answer, _ = _request(netloc, method, path + query, body)
                    except TimeoutError:
                        status, answer = 0, b"no answer"
                    asked += 1
                    if not 0 < status < 500 and status not in DELIBERATE:
                        failures.add(f"{method} {template} {body[:40]!r} -> {status} "
                                     f"{answer[:120]!r}")
    assert asked > 1000
    assert not failures, "\n".join(sorted(failures)[:60])


def test_owned_namespaces_of_another_host_is_no_open_redirect(cluster: LocalCluster) -> None:
    netloc = urlsplit(cluster.brokers[0].admin_url).netloc
    status, _, location = _request(
        netloc, "GET", "/admin/v2/brokers/any/evil.example:80/ownedNamespaces", b"")
    assert status == 404 and "evil.example" not in location
    status, body, _ = _request(netloc, "GET", f"/admin/v2/brokers/any/{netloc}/ownedNamespaces",
                               b"")
    assert status == 200, body
