"""Leader election whose lock is also the answer to "who leads?" (PIP-468, "Leader Election
and Failover").

The elected candidate creates an ephemeral node at the election path holding its value (a
broker URL), so readers learn the leader by reading that one node and are told "no leader"
when it disappears with the leader's session. Two classes, one idiom each, as kazoo's
recipes read: `LeaderElection` campaigns, `LeaderWatcher` follows the outcome.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from enum import Enum

from impl.metadata.errors import AlreadyExists, NotFound, Unavailable, VersionConflict
from impl.metadata.session import SessionEvent
from impl.metadata.store import MetadataStore, Node, Watch

log = logging.getLogger(__name__)

_UNSEEN = object()


class LeaderElectionState(Enum):
    """Pulsar's `LeaderElectionState` names."""

    NO_LEADER = "NoLeader"
    LEADING = "Leading"
    FOLLOWING = "Following"


class LeaderElection:
    """A candidate for leadership at `path`, proposing `value` as the leader's identity.

    Leadership is held only while this candidate's session is known to be alive: on
    SUSPENDED the leader stops at once (`on_lost`), because the session may already be
    expired on the server and another candidate leading; when the same session comes back
    it reclaims its still-existing node, and after a new session it campaigns again.
    Callbacks run on the store's notifier thread (or in `start`/`stop`'s caller).
    """

    def __init__(
        self,
        store: MetadataStore,
        path: str,
        value: str,
        *,
        on_elected: Callable[[], None] | None = None,
        on_lost: Callable[[], None] | None = None,
    ) -> None:
        self._store = store
        self._path = path
        self._value = value
        self._on_elected = on_elected
        self._on_lost = on_lost
        self._lock = threading.RLock()
        self._state = LeaderElectionState.NO_LEADER
        self._leader: str | None = None
        self._running = False
        self._connected = True
        self._watches: list[Watch] = []

    @property
    def state(self) -> LeaderElectionState:
        return self._state

    @property
    def is_leader(self) -> bool:
        return self._state == LeaderElectionState.LEADING

    @property
    def leader(self) -> str | None:
        """The leader's value as this candidate last saw it (its own when leading)."""
        return self._leader

    def start(self) -> None:
        """Campaign now and keep campaigning whenever the seat is free; on return the
        first round is decided (unless the store is unavailable)."""
        with self._lock:
            if self._running:
                return
            self._running = True
            self._connected = True
            self._watches = [
                self._store.watch_session(self._on_session_event),
                self._store.watch_data(self._path, self._on_node_change),
            ]
            self._campaign()

    def stop(self) -> None:
        """Withdraw: stop campaigning and, when leading, delete our node so that another
        candidate takes over without waiting for a session timeout."""
        with self._lock:
            if not self._running:
                return
            self._running = False
            for watch in self._watches:
                watch.cancel()
            self._watches = []
            was_leading = self.is_leader
            self._set_state(LeaderElectionState.NO_LEADER, None)
            if was_leading:
                self._delete_own_node()

    def _delete_own_node(self) -> None:
        try:
            node = self._store.get_node(self._path)
            if node.ephemeral_owner == self._store.session_id:
                self._store.delete(self._path, node.version)
        except (NotFound, VersionConflict, Unavailable):
            # Gone already, or it goes with our session.
            pass

    def _campaign(self) -> None:
        if not (self._running and self._connected):
            return
        try:
            self._store.create(self._path, self._value.encode(), ephemeral=True)
            self._set_state(LeaderElectionState.LEADING, self._value)
            return
        except AlreadyExists:
            pass
        except Unavailable as exc:
            log.info("election at %s waits for the store: %s", self._path, exc)
            return
        try:
            node = self._store.get_node(self._path)
        except (NotFound, Unavailable):
            return  # deleted meanwhile: the data watch calls us again
        self._consider(node)

    def _consider(self, node: Node) -> None:
        holder = node.data.decode()
        if node.ephemeral_owner == self._store.session_id:
            self._set_state(LeaderElectionState.LEADING, holder)
        elif holder == self._value:
            # Our own value under another session: a node left by an earlier session of
            # ours, still waiting for that session to time out. Delete it and campaign
            # again (Pulsar's LeaderElectionImpl does the same); the version pins the node
            # we looked at, and the data watch brings us back after the deletion.
            try:
                self._store.delete(self._path, node.version)
            except (NotFound, VersionConflict, Unavailable):
                pass
        else:
            self._set_state(LeaderElectionState.FOLLOWING, holder)

    def _on_node_change(self, _node: Node | None) -> None:
        # The watched value may already be stale (our own campaign can have overtaken it),
        # so a change is only a cue: the campaign reads the seat afresh and decides.
        with self._lock:
            self._campaign()

    def _on_session_event(self, event: SessionEvent) -> None:
        with self._lock:
            if event in (SessionEvent.SUSPENDED, SessionEvent.LOST):
                self._connected = False
                self._set_state(LeaderElectionState.NO_LEADER, None)
            elif event in (SessionEvent.RECONNECTED, SessionEvent.RECONNECTED_NEW_SESSION):
                self._connected = True
                self._campaign()

    def _set_state(self, state: LeaderElectionState, leader: str | None) -> None:
        was_leading = self.is_leader
        self._state, self._leader = state, leader
        if state == LeaderElectionState.LEADING and not was_leading:
            log.info("%s leads at %s", self._value, self._path)
            if self._on_elected is not None:
                self._on_elected()
        elif was_leading and state != LeaderElectionState.LEADING:
            log.info("%s no longer leads at %s (%s)", self._value, self._path, state.value)
            if self._on_lost is not None:
                self._on_lost()

    def __enter__(self) -> LeaderElection:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def current_leader(store: MetadataStore, path: str) -> str | None:
    """The leader's value at the election `path`, None when nobody leads."""
    try:
        return store.get(path).data.decode()
    except NotFound:
        return None


class LeaderWatcher:
    """Tells `on_change(value or None)` who leads at `path`, at once and on every change,
    including the gaps with no leader (PIP-468: other brokers receive `NoLeader`).

    A new leadership term is a change even under the same value: a leader that lost its
    session and won again is reported again.
    """

    def __init__(
        self, store: MetadataStore, path: str, on_change: Callable[[str | None], None]
    ) -> None:
        self._on_change = on_change
        self._last_term: object = _UNSEEN
        self._watch = store.watch_data(path, self._on_node)

    def _on_node(self, node: Node | None) -> None:
        # A term is the leader's value plus its node's creation: the same broker winning
        # again after losing its session is a new term.
        term = None if node is None else (node.data.decode(), node.created_zxid)
        if term == self._last_term:
            return
        self._last_term = term
        self._on_change(None if term is None else term[0])

    def cancel(self) -> None:
        self._watch.cancel()
