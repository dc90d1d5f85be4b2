"""ZooKeeper session states, as the broker needs to hear them.

kazoo reports three connection states (CONNECTED, SUSPENDED, LOST) and, after LOST, quietly
opens a new session and reports CONNECTED again. Whether a CONNECTED is the same session
coming back or a brand-new one is exactly what PIP-57 turns on: after a new session every
ephemeral node (bundle ownership, leader locks, registrations) is gone and must be re-owned.
`SessionTracker` draws that distinction from the session id.
"""

from __future__ import annotations

from enum import Enum

from kazoo.protocol.states import KazooState


class SessionEvent(Enum):
    CONNECTED = "connected"
    """The first session of this store is established."""
    SUSPENDED = "suspended"
    """The connection dropped; the session may still be alive. Stop acting on ephemeral
    state (leadership, ownership) until told more."""
    RECONNECTED = "reconnected"
    """Connected again within the same session: ephemeral nodes and watches survived."""
    LOST = "lost"
    """The session expired (ZooKeeper closed it); its ephemeral nodes are deleted."""
    RECONNECTED_NEW_SESSION = "reconnected_new_session"
    """Connected again after LOST, under a new session id (PIP-57's "reconnect" policy
    starts here: re-create ephemeral nodes, re-campaign)."""


class SessionTracker:
    """Turns kazoo's state changes plus the current session id into `SessionEvent`s.

    Pure bookkeeping (no I/O), so the classification is testable without a server.
    """

    def __init__(self) -> None:
        self._session_id: int | None = None
        self._lost = False

    def on_state(self, state: KazooState, session_id: int | None) -> SessionEvent:
        """The event for kazoo's `state`; `session_id` is the client's id at that moment."""
        if state == KazooState.SUSPENDED:
            return SessionEvent.SUSPENDED
        if state == KazooState.LOST:
            self._lost = True
            return SessionEvent.LOST
        previous, lost = self._session_id, self._lost
        self._session_id, self._lost = session_id, False
        if previous is None:
            return SessionEvent.CONNECTED
        if lost or session_id != previous:
            return SessionEvent.RECONNECTED_NEW_SESSION
        return SessionEvent.RECONNECTED
