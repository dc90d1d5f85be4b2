"""Every admin route, asked with bodies and path values no client should send: each answer
is a 4xx with a reason (or what the route answers anyway: a redirect, 503 without a part),
never a 500; and `ownedNamespaces` redirects only to a live broker of the cluster."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest

from harness.targets.local.cluster import LocalCluster
from tests.cluster.helpers import admin_routes, module_cluster, send

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


cluster = module_cluster("admin-hostile", brokers=1)


def test_no_admin_route_answers_bad_input_with_a_server_error(cluster: LocalCluster) -> None:
    admin = cluster.brokers[0].admin_url
    assert send(admin, "PUT", "/admin/v2/tenants/hostile",
                b'{"allowedClusters": ["standalone"]}').status < 300
    send(admin, "PUT", "/admin/v2/namespaces/hostile/ns")
    failures: set[str] = set()
    asked = 0
    # DELETEs last, so the tenant and namespace the others need are still there
    for method, template in sorted(admin_routes(), key=lambda r: (r[0] == "DELETE", r[1])):
        for values in PATH_VALUES:
            path = PLACEHOLDER.sub(lambda m, v=values: v.get(m.group(1), "x"), template)
            for query in QUERIES:
                for body in BODIES if method in {"PUT", "POST"} else [b""]:
                    try:
                        found = send(admin, method, path + query, body or None, timeout=5)
                        status, answer = found.status, found.body
                    except TimeoutError:
                        status, answer = 0, b"no answer"
                    asked += 1
                    if not 0 < status < 500 and status not in DELIBERATE:
                        failures.add(f"{method} {template} {body[:40]!r} -> {status} "
                                     f"{answer[:120]!r}")
    assert asked > 1000
    assert not failures, "\n".join(sorted(failures)[:60])


def test_owned_namespaces_of_another_host_is_no_open_redirect(cluster: LocalCluster) -> None:
    admin = cluster.brokers[0].admin_url
    refused = send(admin, "GET", "/admin/v2/brokers/any/evil.example:80/ownedNamespaces")
    assert refused.status == 404 and "evil.example" not in refused.headers.get("Location", "")
    netloc = urlsplit(admin).netloc
    owned = send(admin, "GET", f"/admin/v2/brokers/any/{netloc}/ownedNamespaces")
    assert owned.status == 200, owned.body
