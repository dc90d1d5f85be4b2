"""The bookie's live registration: an ephemeral node `/ledgers/available/{host}:{port}`,
so managed ledgers pick bookies that serve.

A bookie restarted right after a crash may find the node of its previous session still
there; it waits for that node to go (the PIP-57 idiom of `claim_ephemeral`) rather than
trust it, since it vanishes when the old session expires. After a new session (the old
one expired while we were cut off) the node is created again.
"""

from __future__ import annotations

import logging
import threading

from impl.metadata import paths
from impl.metadata.ephemeral import claim_ephemeral
from impl.metadata.errors import MetadataError
from impl.metadata.session import SessionEvent
from impl.metadata.store import MetadataStore

log = logging.getLogger(__name__)

_RETRY_INTERVAL = 0.5


class BookieRegistration:
    def __init__(self, store: MetadataStore, address: str, stale_wait: float) -> None:
        self.store = store
        self.address = address
        self.path = paths.bookie_registration(address)
        self._stale_wait = stale_wait
        self._stopped = threading.Event()
        self._lock = threading.Lock()

    def register_in_background(self) -> None:
        """Register now (retrying until it works) and again after every new session."""
        self.store.watch_session(self._on_session)
        threading.Thread(target=self._register, name="bookie-registration", daemon=True).start()

    def _on_session(self, event: SessionEvent) -> None:
        if event == SessionEvent.RECONNECTED_NEW_SESSION:
            threading.Thread(target=self._register, name="bookie-registration",
                             daemon=True).start()

    def _register(self) -> None:
        with self._lock:
            while not self._stopped.is_set():
                try:
                    claim = claim_ephemeral(self.store, self.path, self.address.encode(),
                                            stale_wait=self._stale_wait)
                except MetadataError as exc:
                    log.warning("registering %s failed (%s); retrying", self.path, exc)
                else:
                    if claim.ours:
                        log.info("registered as %s", self.path)
                        return
                    log.warning("%s is held by %r; retrying", self.path, claim.holder)
                self._stopped.wait(_RETRY_INTERVAL)

    def stop(self) -> None:
        self._stopped.set()
