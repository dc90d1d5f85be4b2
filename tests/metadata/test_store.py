"""The metadata store against a real ZooKeeper."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from harness.ports import free_ports
from harness.targets.local.zookeeper import ZooKeeperEnsemble
from impl.metadata import paths
from impl.metadata.errors import AlreadyExists, NotEmpty, NotFound, Unavailable, VersionConflict
from impl.metadata.ids import allocate_id
from impl.metadata.store import MetadataStore, Node
from tests.fixtures.recording import Recorder

pytestmark = pytest.mark.zk

Connect = Callable[..., MetadataStore]


def test_create_get_and_the_errors_a_caller_catches(zk_store: Connect) -> None:
    store = zk_store()
    assert store.create("/a/b/c", b"v") == "/a/b/c"
    assert store.get("/a/b/c") == (b"v", 0)
    assert store.exists("/a/b") and not store.exists("/a/x")
    with pytest.raises(AlreadyExists):
        store.create("/a/b/c", b"again")
    with pytest.raises(NotFound, match="/a/x"):
        store.get("/a/x")
    with pytest.raises(NotFound):
        store.create("/no/parent", make_parents=False)


def test_cas_conflict(zk_store: Connect) -> None:
    first, second = zk_store(), zk_store()
    first.create("/counter", b"0")
    data, version = second.get("/counter")
    first.set("/counter", b"1", first.get("/counter").version)

    with pytest.raises(VersionConflict):
        second.set("/counter", data + b"+stale", version)

    data, version = second.get("/counter")
    assert second.set("/counter", data + b"+2", version) == version + 1
    assert first.get("/counter") == (b"1+2", 2)


def test_update_retries_until_its_write_lands_on_the_latest_value(zk_store: Connect) -> None:
    mine, rival = zk_store(), zk_store()
    mine.create("/n", b"0")
    calls = []

    def increment(data: bytes) -> bytes:
        calls.append(data)
        if len(calls) == 1:  # a rival writes between our read and our write
            rival.set("/n", b"10", -1)
        return str(int(data) + 1).encode()

    assert mine.update("/n", increment) == (b"11", 2)
    assert calls == [b"0", b"10"]


def test_update_gives_up_after_its_retries(zk_store: Connect) -> None:
    mine, rival = zk_store(), zk_store()
    mine.create("/n", b"0")
    calls = []

    def always_overtaken(data: bytes) -> bytes:
        calls.append(data)
        rival.set("/n", b"rival", -1)
        return b"mine"

    with pytest.raises(VersionConflict):
        mine.update("/n", always_overtaken, retries=2)
    assert len(calls) == 3
    assert mine.get("/n").data == b"rival"


def test_delete_checks_version_and_children(zk_store: Connect) -> None:
    store = zk_store()
    store.create("/t/x/y", b"")
    with pytest.raises(NotEmpty):
        store.delete("/t")
    store.set("/t/x/y", b"changed", 0)
    with pytest.raises(VersionConflict):
        store.delete("/t/x/y", expected_version=0)
    store.delete("/t/x/y", expected_version=1)
    store.create("/t/x/z", b"")
    store.delete("/t", recursive=True)
    assert not store.exists("/t")


def test_children_are_sorted_and_names_decode(zk_store: Connect) -> None:
    store = zk_store()
    for topic in ["b", "a/slash", "c"]:
        store.create(paths.managed_ledger("acme", "ns", topic), b"{}")
    names = store.children(paths.namespace_managed_ledgers("acme", "ns"))
    assert [paths.decode(n) for n in names] == ["a/slash", "b", "c"]


def test_data_watch_fires_on_change(zk_store: Connect) -> None:
    watcher, writer = zk_store(), zk_store()
    seen: Recorder[Node | None] = Recorder()
    watch = watcher.watch_data("/w", seen)
    seen.wait_for(lambda v: v == [None])

    writer.create("/w", b"one")
    seen.wait_for(lambda v: len(v) == 2)
    writer.set("/w", b"two", 0)
    writer.delete("/w")
    values = seen.wait_for(lambda v: v[-1] is None and len(v) >= 3)
    datas = [None if n is None else n.data for n in values]
    assert datas[:2] == [None, b"one"]
    assert datas[-1] is None
    assert set(datas[2:-1]) <= {b"two"}

    watch.cancel()
    writer.create("/w", b"after cancel")
    writer.set("/w", b"still after cancel", 0)
    assert writer.get("/w").version == 1  # both writes are done...
    assert seen.values == values  # ...and nobody was told


def test_data_watch_reports_a_deletion_even_when_the_node_is_back(zk_store: Connect) -> None:
    watcher, writer = zk_store(), zk_store()
    writer.create("/w", b"first")
    seen: Recorder[Node | None] = Recorder()
    watcher.watch_data("/w", seen)
    seen.wait_for(lambda v: len(v) == 1)
    writer.delete("/w")
    writer.create("/w", b"second")
    values = seen.wait_for(lambda v: v[-1] is not None and v[-1].data == b"second")
    assert None in values


def test_children_watch(zk_store: Connect) -> None:
    store = zk_store()
    store.create("/parent")
    seen: Recorder[list[str]] = Recorder()
    store.watch_children("/parent", seen)
    seen.wait_for(lambda v: v == [[]])
    store.create("/parent/b")
    store.create("/parent/a")
    seen.wait_for(lambda v: v[-1] == ["a", "b"])
    with pytest.raises(NotFound):
        store.watch_children("/missing", seen)


def test_chroots_isolate_clients(zk_store: Connect, zk_ensemble: ZooKeeperEnsemble) -> None:
    inside = zk_store()
    inside.create("/only-here", b"x")
    with MetadataStore.connect(f"{zk_ensemble.connect_string}/elsewhere") as outside:
        assert not outside.exists("/only-here")
    with MetadataStore.connect(zk_ensemble.connect_string) as root:
        assert root.get(f"{inside.chroot}/only-here").data == b"x"


def test_sequential_ids_are_unique_and_increasing(zk_store: Connect) -> None:
    first, second = zk_store(), zk_store()
    ids = [allocate_id(s, paths.LEDGER_ID_PREFIX) for s in (first, second, first, second)]
    assert ids == sorted(set(ids))
    assert first.children("/ledgers/idgen") == []


def test_ephemeral_owner_is_the_creating_session(zk_store: Connect) -> None:
    owner, other = zk_store(), zk_store()
    owner.create("/lock", b"", ephemeral=True)
    owner.create("/persistent", b"")
    assert other.ephemeral_owner("/lock") == owner.session_id != other.session_id
    assert other.ephemeral_owner("/persistent") == 0
    owner.close()
    assert not other.exists("/lock")


def test_a_dead_ensemble_gives_unavailable_not_a_hang(
    make_zk_ensemble: Callable[[int], ZooKeeperEnsemble],
) -> None:
    ensemble = make_zk_ensemble(1)
    with MetadataStore.connect(ensemble.connect_string, operation_timeout=1.0) as store:
        store.create("/x", b"")
        ensemble.stop()
        with pytest.raises(Unavailable, match="get /x"):
            store.get("/x")


def test_connecting_where_no_server_listens_is_unavailable() -> None:
    (port,) = free_ports(1)
    with pytest.raises(Unavailable, match="connect"):
        MetadataStore.connect(f"127.0.0.1:{port}", connect_timeout=1.0)
