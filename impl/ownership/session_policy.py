"""PIP-57: what the broker does when its ZooKeeper session expires.

`zookeeperSessionExpiredPolicy`:

- `shutdown`: the broker exits (non-zero), so its ephemeral nodes are gone for good and
  other brokers take its bundles on the next lookups.
- `reconnect`: the broker waits for a new session and re-owns the bundles it cached
  (PIP-57, "Topic ownership data handling"): a node of the old session is waited out, a
  free bundle is claimed again, and a bundle another broker took meanwhile is unloaded. The
  live registration is re-created too ("Broker load data handling"). If no new session
  comes within `reconnect_retries` session timeouts, the broker shuts down ("After the
  number of retries, if still can't start session success, the broker still needs to be
  shut down").

As in Pulsar, a connection that stays down for a whole session timeout counts as an
expiry: the server has expired the session by then, even if the client cannot hear it.

None of this makes a lost topic safe to write: a paused broker acts on nothing until it
runs again. Safety comes from the managed ledger's fencing; this policy only decides who
serves next.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from enum import Enum

from impl.metadata.errors import MetadataError
from impl.metadata.session import SessionEvent
from impl.metadata.store import MetadataStore, Watch
from impl.naming.bundles import NamespaceBundle
from impl.ownership.brokers import BrokerRegistry
from impl.ownership.ownership_cache import BundleState, OwnershipCache

log = logging.getLogger(__name__)


class SessionExpiredPolicy(Enum):
    SHUTDOWN = "shutdown"
    RECONNECT = "reconnect"


class SessionPolicy:
    """Listens to the store's session events and applies the policy.

    `unload_bundle(bundle)` must unload the bundle and return when done (the broker runs
    it on its event loop); `shutdown(reason)` must make the process exit non-zero. Both
    are called from this policy's own worker thread, never from the store's notifier.
    `give_up=False` is the `reconnect-retried-forever` mutant: under `reconnect` the broker
    never shuts down for want of a new session.
    """

    def __init__(
        self,
        store: MetadataStore,
        policy: SessionExpiredPolicy,
        ownership: OwnershipCache,
        registry: BrokerRegistry,
        *,
        session_timeout: float,
        reconnect_retries: int,
        unload_bundle: Callable[[NamespaceBundle], None],
        shutdown: Callable[[str], object],
        give_up: bool = True,
    ) -> None:
        self._store = store
        self.policy = policy
        self._ownership = ownership
        self._registry = registry
        self._session_timeout = session_timeout
        self._reconnect_retries = reconnect_retries
        self._unload_bundle = unload_bundle
        self._shutdown = shutdown
        self._give_up = give_up
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="session-policy")
        self._lock = threading.Lock()
        self._lost = False
        self._timer: threading.Timer | None = None
        self._watch: Watch | None = None

    @property
    def session_lost(self) -> bool:
        """True from an expiry until the bundles have been re-owned (or unloaded)."""
        return self._lost

    def start(self) -> None:
        self._watch = self._store.watch_session(self._on_event)

    def stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        self._cancel_timer()
        self._worker.shutdown(wait=False, cancel_futures=True)

    def _on_event(self, event: SessionEvent) -> None:
        # The store's notifier thread: decide here, do the work on our worker.
        if event == SessionEvent.SUSPENDED:
            self._start_timer(self._session_timeout, self._suspended_too_long)
        elif event == SessionEvent.RECONNECTED:
            self._cancel_timer()
            if self._lost:
                # We gave the session up too early; its nodes may well still be ours,
                # which re-owning finds out (a node owned by our session is ours).
                self._worker.submit(self._reown)
        elif event == SessionEvent.LOST:
            self._cancel_timer()
            self._worker.submit(self._session_lost, "expired")
        elif event == SessionEvent.RECONNECTED_NEW_SESSION:
            self._cancel_timer()
            # LOST came first as a rule; if it was missed, the new session says it all.
            self._worker.submit(self._session_lost, "expired")
            if self.policy == SessionExpiredPolicy.RECONNECT:
                self._worker.submit(self._reown)

    def _suspended_too_long(self) -> None:
        self._worker.submit(
            self._session_lost, f"unreachable for a whole session timeout "
                                f"({self._session_timeout:.1f} s)")

    def _session_lost(self, reason: str) -> None:
        with self._lock:
            if self._lost:
                return
            self._lost = True
        bundles = self._ownership.mark_unconfirmed()
        log.warning("ZooKeeper session %s; %d owned bundle(s) unconfirmed; policy %s",
                    reason, len(bundles), self.policy.value)
        if self.policy == SessionExpiredPolicy.SHUTDOWN:
            self._shutdown(f"ZooKeeper session {reason} (zookeeperSessionExpiredPolicy=shutdown)")
            return
        if not self._give_up:
            # Mutant `reconnect-retried-forever`: PIP-57 asks for a bounded number of
            # attempts and then a shutdown ("the broker still needs to be shut down");
            # without the timer the broker waits for a new session for ever, up but
            # owning nothing: clients that reach it get errors instead of finding it gone.
            return
        give_up_after = self._reconnect_retries * self._session_timeout
        self._start_timer(give_up_after, lambda: self._worker.submit(
            self._shutdown, f"no new ZooKeeper session after {self._reconnect_retries} "
                            f"attempts ({give_up_after:.1f} s)"))

    def _reown(self) -> None:
        """PIP-57 "reconnect" under the new session."""
        self._cancel_timer()
        try:
            self._registry.register()
        except MetadataError as exc:
            log.warning("could not re-register as a live broker: %s", exc)
        kept, given_up = 0, 0
        for bundle, state in self._ownership.owned_bundles().items():
            if state != BundleState.UNCONFIRMED:
                continue
            try:
                ours = self._ownership.reown(bundle)
            except MetadataError as exc:
                log.warning("re-owning %s failed (%s); unloading it", bundle, exc)
                ours = False
            if ours:
                kept += 1
            else:
                given_up += 1
                self._unload_bundle(bundle)
        with self._lock:
            self._lost = False
        log.info("after the new session: kept %d bundle(s), unloaded %d", kept, given_up)

    def _start_timer(self, delay: float, action: Callable[[], object]) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(delay, action)
            self._timer.daemon = True
            self._timer.start()

    def _cancel_timer(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
