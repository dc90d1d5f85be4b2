"""`OwnedNode` against a real ZooKeeper: a write whose reply was lost is recognised as the
owner's own by the next write, one that never landed costs nothing, and a rival's write in
between still conflicts."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from impl.metadata.errors import Unavailable, VersionConflict
from impl.metadata.owned_node import OwnedNode
from impl.metadata.store import MetadataStore

pytestmark = pytest.mark.zk

Connect = Callable[..., MetadataStore]
PATH = "/owned"


def _failing_once(store: MetadataStore, monkeypatch: pytest.MonkeyPatch, *,
                  lands: bool) -> None:
    """The store's next `set` reports the connection lost, after applying it when
    `lands` (its reply was lost) or without applying it (its request was)."""
    real_set = store.set

    def lost(path: str, data: bytes, expected_version: int) -> int:
        monkeypatch.undo()
        if lands:
            real_set(path, data, expected_version)
        raise Unavailable("set", path, "ConnectionLoss")

    monkeypatch.setattr(store, "set", lost)


@pytest.mark.parametrize("lands", [True, False], ids=["reply-lost", "request-lost"])
def test_the_write_after_an_unknown_outcome_settles_it(
        zk_store: Connect, monkeypatch: pytest.MonkeyPatch, lands: bool) -> None:
    store = zk_store()
    store.create(PATH, b"0")
    node = OwnedNode(store, PATH, 0)
    _failing_once(store, monkeypatch, lands=lands)
    with pytest.raises(Unavailable):
        node.write(b"1")

    assert node.write(b"2") == (2 if lands else 1)
    assert store.get(PATH) == (b"2", node.version)


def test_a_rival_write_after_an_unknown_outcome_still_conflicts(
        zk_store: Connect, monkeypatch: pytest.MonkeyPatch) -> None:
    store, rival = zk_store(), zk_store()
    store.create(PATH, b"0")
    node = OwnedNode(store, PATH, 0)
    _failing_once(store, monkeypatch, lands=True)
    with pytest.raises(Unavailable):
        node.write(b"1")
    rival.set(PATH, b"rival", 1)

    with pytest.raises(VersionConflict):
        node.write(b"2")
    assert store.get(PATH) == (b"rival", 2)
