"""Session expiry and reconnects, as the broker hears them (PIP-57)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from kazoo.client import KazooClient

from harness.targets.local.zookeeper import ZooKeeperEnsemble
from impl.metadata.session import SessionEvent
from impl.metadata.store import MetadataStore
from nemesis.session_expiry import expire_session, expire_session_of
from tests.fixtures.recording import Recorder

pytestmark = pytest.mark.zk

Connect = Callable[..., MetadataStore]


def test_expired_session_loses_its_ephemeral_node_and_reports_a_new_session(
    zk_store: Connect,
) -> None:
    victim, observer = zk_store(), zk_store()
    events: Recorder[SessionEvent] = Recorder()
    victim.watch_session(events)
    victim.create("/owned", b"broker-1", ephemeral=True)
    old_session = victim.session_id

    assert expire_session_of(victim) is True

    # The server deleted the node when it closed the session, before expiry returned.
    assert not observer.exists("/owned")
    seen = events.wait_for(lambda v: SessionEvent.RECONNECTED_NEW_SESSION in v)
    assert seen.index(SessionEvent.LOST) < seen.index(SessionEvent.RECONNECTED_NEW_SESSION)
    assert victim.session_id not in (None, old_session)
    # The new session works, and owns nothing of the old one.
    victim.create("/owned", b"broker-1", ephemeral=True)
    assert observer.ephemeral_owner("/owned") == victim.session_id


def test_expiring_an_already_expired_session_says_so(zk_store: Connect) -> None:
    victim = zk_store()
    session_id, password = victim.session_id, victim.session_password
    assert session_id is not None and password is not None
    assert expire_session(victim.hosts, session_id, password) is True
    assert expire_session(victim.hosts, session_id, password) is False


def test_losing_the_connection_but_not_the_session_is_a_reconnect(
    zk_ensemble3: ZooKeeperEnsemble,
) -> None:
    events: Recorder[SessionEvent] = Recorder()
    with MetadataStore.connect(
        zk_ensemble3.connect_string, session_timeout=20.0, session_listener=events
    ) as store:
        store.create("/owned", b"", ephemeral=True)
        session = store.session_id
        assert session is not None
        serving = zk_ensemble3.serving_member(session)
        assert serving is not None

        zk_ensemble3.nodes[serving].stop()  # the client moves to another member

        seen = events.wait_for(lambda v: v[-1] == SessionEvent.RECONNECTED)
        assert seen[:2] == [SessionEvent.CONNECTED, SessionEvent.SUSPENDED]
        assert SessionEvent.LOST not in seen
        assert store.session_id == session
        assert store.ephemeral_owner("/owned") == session


def test_a_plain_kazoo_clients_session_can_be_expired_too(
    zk_ensemble: ZooKeeperEnsemble, zk_store: Connect
) -> None:
    observer = zk_store()
    client = KazooClient(hosts=f"{zk_ensemble.connect_string}{observer.chroot}")
    client.start()
    try:
        client.create("/owned", ephemeral=True)
        assert expire_session_of(client) is True
        assert not observer.exists("/owned")
    finally:
        client.stop()
        client.close()
