"""ZooKeeper digest ACLs: nodes a store with credentials creates are closed to a client
without them, as `--metadata-digest-file` closes a cluster's metadata."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError

from impl.metadata.store import MetadataStore

pytestmark = pytest.mark.zk

DIGEST = "starquake:a-password"


def test_nodes_created_with_a_digest_are_closed_to_anonymous_clients(
        zk_store: Callable[..., MetadataStore], zk_connect_string: str) -> None:
    zk_store(digest=DIGEST).create("/guarded", b"metadata")
    assert zk_store(digest=DIGEST).get("/guarded").data == b"metadata"
    anonymous = KazooClient(hosts=zk_connect_string)
    anonymous.start(timeout=10)
    try:
        with pytest.raises(NoAuthError):
            anonymous.get("/guarded")
        with pytest.raises(NoAuthError):
            anonymous.set("/guarded", b"overwritten")
    finally:
        anonymous.stop()
        anonymous.close()
