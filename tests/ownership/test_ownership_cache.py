"""Bundle ownership against a real ZooKeeper: one owner at a time, and PIP-57's check of
the ephemeral owner when re-owning."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from impl.metadata.ephemeral import StaleNodeRemains
from impl.metadata.store import MetadataStore
from impl.naming.bundles import NamespaceBundles
from impl.naming.topic_name import NamespaceName
from impl.ownership.brokers import BrokerInfo, BrokerRegistry, choose_broker
from impl.ownership.ownership_cache import BundleState, OwnershipCache, bundle_path

pytestmark = pytest.mark.zk

Connect = Callable[..., MetadataStore]
A = BrokerInfo("pulsar://127.0.0.1:1001", "http://127.0.0.1:2001")
B = BrokerInfo("pulsar://127.0.0.1:1002", "http://127.0.0.1:2002")
BUNDLE = NamespaceBundles.even(NamespaceName("public", "default")).bundles[2]


def test_the_first_claim_wins_and_everyone_sees_the_owner(zk_store: Connect) -> None:
    a = OwnershipCache(zk_store(), A, stale_wait=5)
    b = OwnershipCache(zk_store(), B, stale_wait=5)
    assert a.try_acquire(BUNDLE) == A
    assert b.try_acquire(BUNDLE) == A
    assert a.is_owned(BUNDLE) and not b.is_owned(BUNDLE)
    assert b.owner(BUNDLE) == A

    a.release(BUNDLE)
    assert b.owner(BUNDLE) is None
    assert b.try_acquire(BUNDLE) == B


def test_an_owners_death_frees_its_bundles(zk_store: Connect) -> None:
    dying = zk_store()
    OwnershipCache(dying, A, stale_wait=5).try_acquire(BUNDLE)
    b = OwnershipCache(zk_store(), B, stale_wait=5)
    dying.close()
    assert b.try_acquire(BUNDLE) == B


def _stale_node_of_an_earlier_session(old: MetadataStore, me: BrokerInfo) -> None:
    """What a new session finds when the old one's expiry is not processed yet."""
    old.create(bundle_path(BUNDLE), me.owner_json(), ephemeral=True)


def test_reowning_waits_for_the_earlier_sessions_node_to_go(zk_store: Connect) -> None:
    old, new = zk_store(), zk_store()
    _stale_node_of_an_earlier_session(old, A)
    cache = OwnershipCache(new, A, stale_wait=10)
    timer = threading.Timer(1.0, old.close)
    timer.start()
    try:
        assert cache.try_acquire(BUNDLE) == A
    finally:
        timer.join()
    # The node that stands is the new session's, so it lives as long as we do.
    assert new.ephemeral_owner(bundle_path(BUNDLE)) == new.session_id


def test_a_stale_node_that_stays_is_reported_not_taken(zk_store: Connect) -> None:
    old, new = zk_store(), zk_store()
    _stale_node_of_an_earlier_session(old, A)
    with pytest.raises(StaleNodeRemains, match="earlier session"):
        OwnershipCache(new, A, stale_wait=0.5).try_acquire(BUNDLE)


def test_mutant_reown_without_owner_check_serves_a_bundle_it_holds_no_node_for(
        zk_store: Connect) -> None:
    """The twin of the test above: with the check off the broker believes at once, and
    once the old session's node goes it owns the bundle with no node at all."""
    old, new, other = zk_store(), zk_store(), zk_store()
    _stale_node_of_an_earlier_session(old, A)
    cache = OwnershipCache(new, A, stale_wait=10, check_owner=False)
    assert cache.try_acquire(BUNDLE) == A
    old.close()
    assert cache.is_owned(BUNDLE)
    assert OwnershipCache(other, B, stale_wait=5).try_acquire(BUNDLE) == B  # two owners


def test_after_a_new_session_cached_bundles_are_reowned_unless_taken(zk_store: Connect) -> None:
    store = zk_store()
    cache = OwnershipCache(store, A, stale_wait=5)
    bundles = NamespaceBundles.even(NamespaceName("public", "default")).bundles
    kept, taken = bundles[0], bundles[1]
    cache.try_acquire(kept)
    cache.try_acquire(taken)
    # As after an expiry: the nodes are gone, and another broker grabbed one bundle.
    store.delete(bundle_path(kept))
    store.delete(bundle_path(taken))
    OwnershipCache(zk_store(), B, stale_wait=5).try_acquire(taken)

    assert sorted(cache.mark_unconfirmed()) == sorted([kept, taken])
    assert cache.state(kept) == BundleState.UNCONFIRMED and not cache.is_owned(kept)
    assert cache.reown(kept) is True and cache.is_owned(kept)
    assert cache.reown(taken) is False


def test_live_brokers_and_the_choice_among_them(zk_store: Connect) -> None:
    store_a = zk_store()
    BrokerRegistry(store_a, A, stale_wait=5).register()
    registry_b = BrokerRegistry(zk_store(), B, stale_wait=5)
    registry_b.register()
    live = registry_b.live_brokers()
    assert sorted(live, key=str) == [A, B]
    bundles = NamespaceBundles.even(NamespaceName("t", "ns"), 64).bundles
    chosen = [choose_broker(b, live) for b in bundles]
    assert set(chosen) == {A, B}  # spread over both
    assert chosen == [choose_broker(b, list(reversed(live))) for b in bundles]  # order-free
    store_a.close()
    assert registry_b.live_brokers() == [B]
    assert choose_broker(bundles[0], []) is None
