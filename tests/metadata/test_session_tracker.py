"""Telling a reconnect within the same session from a new session (PIP-57)."""

from __future__ import annotations

from kazoo.protocol.states import KazooState

from impl.metadata.session import SessionEvent, SessionTracker


def test_connection_drop_within_the_session_is_a_reconnect() -> None:
    tracker = SessionTracker()
    seen = [
        tracker.on_state(KazooState.CONNECTED, 11),
        tracker.on_state(KazooState.SUSPENDED, 11),
        tracker.on_state(KazooState.CONNECTED, 11),
    ]
    assert seen == [SessionEvent.CONNECTED, SessionEvent.SUSPENDED, SessionEvent.RECONNECTED]


def test_connecting_after_expiry_is_a_new_session() -> None:
    tracker = SessionTracker()
    seen = [
        tracker.on_state(KazooState.CONNECTED, 11),
        tracker.on_state(KazooState.SUSPENDED, 11),
        tracker.on_state(KazooState.LOST, None),
        tracker.on_state(KazooState.CONNECTED, 12),
        tracker.on_state(KazooState.SUSPENDED, 12),
        tracker.on_state(KazooState.CONNECTED, 12),
    ]
    assert seen == [
        SessionEvent.CONNECTED,
        SessionEvent.SUSPENDED,
        SessionEvent.LOST,
        SessionEvent.RECONNECTED_NEW_SESSION,
        SessionEvent.SUSPENDED,
        SessionEvent.RECONNECTED,
    ]


def test_a_changed_session_id_is_a_new_session_even_without_lost() -> None:
    tracker = SessionTracker()
    tracker.on_state(KazooState.CONNECTED, 11)
    assert tracker.on_state(KazooState.CONNECTED, 12) == SessionEvent.RECONNECTED_NEW_SESSION
