"""PIP-57 against a real ZooKeeper: a real session expiry, both policies."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from harness.targets.local.zookeeper import ZooKeeperEnsemble
from impl.metadata.store import MetadataStore
from impl.naming.bundles import NamespaceBundle, NamespaceBundles
from impl.naming.topic_name import NamespaceName
from impl.ownership.brokers import BrokerInfo, BrokerRegistry
from impl.ownership.ownership_cache import OwnershipCache, bundle_path
from impl.ownership.session_policy import SessionExpiredPolicy, SessionPolicy
from nemesis.session_expiry import expire_session_of
from tests.fixtures.recording import Recorder, eventually

pytestmark = pytest.mark.zk

Connect = Callable[..., MetadataStore]
A = BrokerInfo("pulsar://127.0.0.1:1001", "http://127.0.0.1:2001")
B = BrokerInfo("pulsar://127.0.0.1:1002", "http://127.0.0.1:2002")
BUNDLES = NamespaceBundles.even(NamespaceName("public", "default")).bundles


class Broker:
    """The ownership side of a broker, with the policy's two callbacks recorded."""

    def __init__(self, store: MetadataStore, policy: SessionExpiredPolicy,
                 retries: int = 3, give_up: bool = True) -> None:
        self.store = store
        self.ownership = OwnershipCache(store, A, stale_wait=5)
        self.registry = BrokerRegistry(store, A, stale_wait=5)
        self.registry.register()
        self.unloaded: Recorder[NamespaceBundle] = Recorder()
        self.shutdowns: Recorder[str] = Recorder()

        def unload(bundle: NamespaceBundle) -> None:
            self.ownership.release(bundle)
            self.unloaded(bundle)

        self.policy = SessionPolicy(store, policy, self.ownership, self.registry,
                                    session_timeout=2.0, reconnect_retries=retries,
                                    unload_bundle=unload, shutdown=self.shutdowns,
                                    give_up=give_up)
        self.policy.start()


def test_reconnect_keeps_the_bundles_nobody_took_and_unloads_the_one_taken(
        zk_store: Connect) -> None:
    broker = Broker(zk_store(session_timeout=2.0), SessionExpiredPolicy.RECONNECT)
    other = OwnershipCache(zk_store(), B, stale_wait=5)
    for bundle in BUNDLES:
        broker.ownership.try_acquire(bundle)
    taken = BUNDLES[1]

    expire_session_of(broker.store)
    # The server deleted the nodes when it closed the session; another broker is quicker
    # than the expired one's reconnect.
    assert other.try_acquire(taken) == B

    assert broker.unloaded.wait_for(lambda v: v == [taken])
    eventually(lambda: not broker.policy.session_lost, what="re-owning to finish")
    session = broker.store.session_id
    for bundle in BUNDLES:
        if bundle != taken:
            assert broker.ownership.is_owned(bundle)
            assert broker.store.ephemeral_owner(bundle_path(bundle)) == session
    assert not broker.ownership.is_owned(taken)
    assert other.owner(taken) == B
    # The live registration came back under the new session too.
    assert broker.store.ephemeral_owner(broker.registry.path) == session
    assert broker.shutdowns.values == []


def test_shutdown_policy_shuts_down_on_expiry(zk_store: Connect) -> None:
    broker = Broker(zk_store(session_timeout=2.0), SessionExpiredPolicy.SHUTDOWN)
    broker.ownership.try_acquire(BUNDLES[0])
    expire_session_of(broker.store)
    reasons = broker.shutdowns.wait_for(lambda v: len(v) >= 1)
    assert "expired" in reasons[0] and "shutdown" in reasons[0]
    assert not broker.ownership.is_owned(BUNDLES[0])


@pytest.mark.parametrize("give_up", [True, False], ids=["pip57", "mutant"])
def test_reconnect_gives_up_and_shuts_down_when_no_new_session_comes(
        make_zk_ensemble: Callable[[int], ZooKeeperEnsemble], give_up: bool) -> None:
    """The `False` case is mutant `reconnect-retried-forever`: the broker stays up, cut
    off, owning nothing, well past the point where PIP-57 shuts it down."""
    ensemble = make_zk_ensemble(1)
    store = MetadataStore.connect(ensemble.connect_string, session_timeout=2.0)
    try:
        broker = Broker(store, SessionExpiredPolicy.RECONNECT, retries=2, give_up=give_up)
        broker.ownership.try_acquire(BUNDLES[0])
        ensemble.stop()
        # Unreachable for a session timeout (2 s) counts as expired, then two attempts'
        # worth of waiting (4 s) before giving up.
        if give_up:
            reasons = broker.shutdowns.wait_for(lambda v: len(v) >= 1, timeout=20)
            assert "no new ZooKeeper session after 2 attempts" in reasons[0]
        else:
            eventually(lambda: broker.policy.session_lost, what="the session to count as lost")
            time.sleep(8)  # twice the point where PIP-57 gives up
            assert broker.shutdowns.values == []
            assert broker.policy.session_lost
        assert not broker.ownership.is_owned(BUNDLES[0])
    finally:
        store.close()
