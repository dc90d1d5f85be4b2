"""The bundles this broker owns: ephemeral nodes in ZooKeeper, mirrored in memory.

A broker owns a bundle from the moment it creates the bundle's ephemeral node
(`/namespace/{tenant}/{ns}/{range}`, holding the broker's URLs) until it deletes it or its
session ends. The in-memory set is what the broker serves from without asking ZooKeeper
for every message (Pulsar's `OwnershipCache`); it is also what PIP-57's reconnect policy
re-owns after a new session. Being in the set is a belief, not a guarantee: a paused broker
may still believe after its node is gone, and only the fencing of the managed ledger keeps
its writes from being acknowledged.

All methods block on ZooKeeper; asyncio callers run them in a thread.
"""

from __future__ import annotations

import logging
import threading
from collections import defaultdict
from enum import Enum

from impl.metadata import paths
from impl.metadata.ephemeral import claim_ephemeral
from impl.metadata.errors import NotFound, VersionConflict
from impl.metadata.store import MetadataStore
from impl.naming.bundles import NamespaceBundle
from impl.ownership.brokers import BrokerInfo

log = logging.getLogger(__name__)


def bundle_path(bundle: NamespaceBundle) -> str:
    return paths.bundle_owner(bundle.namespace.tenant, bundle.namespace.namespace,
                              str(bundle.range))


class BundleState(Enum):
    ACTIVE = "active"
    """Owned and served."""
    UNCONFIRMED = "unconfirmed"
    """Our session was lost: the node is gone and re-owning has not decided yet. Topics
    already open keep running (fencing protects them); nothing new is loaded."""
    UNLOADING = "unloading"
    """Being given up: clients are being closed, the node is deleted last."""


class OwnershipCache:
    def __init__(self, store: MetadataStore, me: BrokerInfo, *, stale_wait: float,
                 check_owner: bool = True) -> None:
        self._store = store
        self.me = me
        self._stale_wait = stale_wait
        self._check_owner = check_owner
        self._lock = threading.Lock()
        self._bundles: dict[NamespaceBundle, BundleState] = {}
        # One lock per bundle: a claim may wait out a stale node for seconds, and must
        # not hold up claims of other bundles meanwhile.
        self._claim_locks: defaultdict[NamespaceBundle, threading.Lock] = defaultdict(
            threading.Lock)

    # --- what we believe ---------------------------------------------------------------

    def state(self, bundle: NamespaceBundle) -> BundleState | None:
        with self._lock:
            return self._bundles.get(bundle)

    def is_owned(self, bundle: NamespaceBundle) -> bool:
        """Whether we serve the bundle now (no ZooKeeper read)."""
        return self.state(bundle) == BundleState.ACTIVE

    def owned_bundles(self) -> dict[NamespaceBundle, BundleState]:
        with self._lock:
            return dict(self._bundles)

    def _set(self, bundle: NamespaceBundle, state: BundleState | None) -> None:
        with self._lock:
            if state is None:
                self._bundles.pop(bundle, None)
            else:
                self._bundles[bundle] = state

    # --- ZooKeeper ---------------------------------------------------------------------

    def owner(self, bundle: NamespaceBundle) -> BrokerInfo | None:
        """The owner recorded in ZooKeeper now (ourselves included), None if free."""
        if self.is_owned(bundle):
            return self.me
        try:
            return BrokerInfo.from_owner_json(self._store.get(bundle_path(bundle)).data)
        except NotFound:
            return None

    def try_acquire(self, bundle: NamespaceBundle) -> BrokerInfo:
        """Own the bundle if it is free; return its owner (`self.me` when we own it).

        May raise `StaleNodeRemains` (a node of an earlier session of ours still there)
        or `Unavailable`.
        """
        with self._claim_locks[bundle]:
            if self.is_owned(bundle):
                return self.me
            claim = claim_ephemeral(self._store, bundle_path(bundle), self.me.owner_json(),
                                    stale_wait=self._stale_wait, check_owner=self._check_owner)
            if not claim.ours:
                return BrokerInfo.from_owner_json(claim.holder)
            if self.state(bundle) != BundleState.UNLOADING:
                self._set(bundle, BundleState.ACTIVE)
                log.info("owns bundle %s", bundle)
            return self.me

    def begin_unload(self, bundle: NamespaceBundle) -> None:
        """Stop serving the bundle; its node stays until `release`."""
        if self.state(bundle) is not None:
            self._set(bundle, BundleState.UNLOADING)

    def release(self, bundle: NamespaceBundle) -> None:
        """Forget the bundle and delete its node if our session holds it, so another
        broker can take it at once instead of waiting for our session to end."""
        with self._claim_locks[bundle]:
            self._set(bundle, None)
            path = bundle_path(bundle)
            try:
                node = self._store.get_node(path)
                if node.ephemeral_owner == self._store.session_id:
                    self._store.delete(path, node.version)
            except (NotFound, VersionConflict):
                pass
            log.info("released bundle %s", bundle)

    # --- PIP-57 ------------------------------------------------------------------------

    def mark_unconfirmed(self) -> list[NamespaceBundle]:
        """The session is lost: every owned bundle awaits re-owning. Returns them."""
        with self._lock:
            for bundle, state in self._bundles.items():
                if state == BundleState.ACTIVE:
                    self._bundles[bundle] = BundleState.UNCONFIRMED
            return [b for b, s in self._bundles.items() if s == BundleState.UNCONFIRMED]

    def reown(self, bundle: NamespaceBundle) -> bool:
        """PIP-57 "reconnect": claim the cached bundle again under the new session
        (waiting out the old session's node, unless the owner check is off). True when it
        is ours again; False when another broker owns it now (the caller unloads)."""
        with self._claim_locks[bundle]:
            if self.state(bundle) != BundleState.UNCONFIRMED:
                return self.is_owned(bundle)
            claim = claim_ephemeral(self._store, bundle_path(bundle), self.me.owner_json(),
                                    stale_wait=self._stale_wait, check_owner=self._check_owner)
            if claim.ours:
                self._set(bundle, BundleState.ACTIVE)
                log.info("re-owned bundle %s after a new session", bundle)
            else:
                log.info("bundle %s is owned by %s now", bundle,
                         BrokerInfo.from_owner_json(claim.holder).broker_url)
            return claim.ours
