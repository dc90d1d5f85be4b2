"""Scalable topics on a real cluster: ZooKeeper, a bookie and brokers as processes
(`make_cluster`), driven through the admin REST API and our client (harness/scalable_client)."""

from __future__ import annotations

from tests.fixtures.cluster import make_cluster  # noqa: F401  (the fixture)
