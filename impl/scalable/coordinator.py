"""Segment-to-consumer assignment for one subscription (PIP-468 "SubscriptionCoordinator",
"Rebalancing", "Consumer Session Lifecycle").

A consumer's registration is a durable session: once registered it keeps its segments
through disconnects, and only a grace period without a reconnect (or an explicit
unregister) hands them to others. What is persisted is the registration with its current
assignment, written only when membership or the assignment changes; whether a consumer is
connected, and its grace timer, live in this object only. A new leader rebuilds a
coordinator from the persisted registrations and starts a fresh grace period for each.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol

from impl.mutants import NONE, Mutants
from impl.scalable.assignment import assignable_segments, round_robin, withheld_segments
from impl.scalable.layout import SegmentInfo, SegmentLayout
from impl.scalable.scheduler import Cancellable, Scheduler
from impl.scalable.segment_topics import SegmentDrainChecker
from impl.scalable.sessions import (
    AssignedSegment,
    AssignmentListener,
    ConsumerAssignment,
    ConsumerRegistration,
    SubscriptionMetadata,
)
from wire.topic_names import ScalableTopicName

log = logging.getLogger(__name__)

DEFAULT_GRACE_PERIOD = 60.0
"""Seconds a disconnected consumer keeps its session: Pulsar's default."""
REBALANCE_RETRY_S = 1.0
"""How soon a rebalance that failed (a sealed segment's owner did not answer whether it is
drained, or the registrations could not be written) is tried again."""


class RegistrationStore(Protocol):
    """Where sessions are persisted (the topic's metadata in a broker)."""

    def save_registration(self, subscription: str, registration: ConsumerRegistration
                          ) -> None: ...

    def delete_registration(self, subscription: str, consumer_name: str) -> None: ...


@dataclass(frozen=True)
class DrainStatus:
    """What an ordered subscription may read now and what waits for a parent to drain."""

    assignable: tuple[int, ...]
    withheld: tuple[int, ...]


@dataclass
class _Session:
    registration: ConsumerRegistration
    listener: AssignmentListener | None = None
    """The current connection; None while disconnected."""
    connection_id: int = -1
    grace_timer: Cancellable | None = None
    persisted: bool = True
    grace_token: object = field(default_factory=object)


class SubscriptionCoordinator:
    """Assignments of one subscription; every method is safe from any thread. Listeners are
    called with the lock held, after the registration they announce is persisted."""

    def __init__(
        self,
        topic: ScalableTopicName,
        subscription: SubscriptionMetadata,
        layout: SegmentLayout,
        *,
        registrations: RegistrationStore,
        drain_checker: SegmentDrainChecker,
        scheduler: Scheduler,
        grace_period: float = DEFAULT_GRACE_PERIOD,
        mutants: Mutants = NONE,
    ) -> None:
        self._topic = topic
        self._subscription = subscription
        self._layout = layout
        self._registrations = registrations
        self._drain_checker = drain_checker
        self._scheduler = scheduler
        self._grace_period = grace_period
        self._mutants = mutants
        self._sessions: dict[str, _Session] = {}
        self._lock = threading.RLock()
        self._closed = False
        self._retry: Cancellable | None = None
        """The pending retry of a failed rebalance; at most one."""
        self._drained: set[int] = set()
        """Sealed segments this subscription has read to their end: a sealed segment takes
        no more writes and the cursor only moves forward, so once drained it stays drained,
        and its owner need not be asked again (it may be long gone)."""

    @property
    def subscription(self) -> SubscriptionMetadata:
        return self._subscription

    # --- membership ----------------------------------------------------------------------

    def restore(self, registrations: Iterable[ConsumerRegistration]) -> None:
        """A new leader's start (PIP-468 failover step 1-2): take the persisted sessions
        with their assignments, treat every consumer as just disconnected, and rebalance
        only if the layout moved on since the assignments were written."""
        with self._lock:
            for registration in registrations:
                self._sessions[registration.consumer_name] = _Session(registration)
            for name in list(self._sessions):
                self._start_grace(name)
            self._rebalance()

    def register(self, consumer_name: str, consumer_id: int, listener: AssignmentListener
                 ) -> ConsumerAssignment:
        """Add a consumer, or resume its session when it reconnects: a known name keeps its
        assignment and nobody else is disturbed. Returns the consumer's assignment (it is
        not pushed to `listener` as well)."""
        with self._lock:
            session = self._sessions.get(consumer_name)
            if session is None:
                session = _Session(ConsumerRegistration(
                    consumer_name, consumer_id, ConsumerAssignment(self._layout.epoch)),
                    persisted=False)
                self._sessions[consumer_name] = session
                self._rebalance()
            self._cancel_grace(session)
            session.listener, session.connection_id = listener, consumer_id
            return session.registration.assignment

    def disconnected(self, consumer_name: str, consumer_id: int) -> None:
        """The consumer's connection closed: keep its session for the grace period. A close
        of a connection the consumer already replaced is ignored."""
        with self._lock:
            session = self._sessions.get(consumer_name)
            if session is None or session.listener is None or session.connection_id != consumer_id:
                return
            session.listener = None
            self._start_grace(consumer_name)

    def unregister(self, consumer_name: str) -> bool:
        """Remove the session now and hand its segments to the others. False when there was
        no such consumer (a repeated request)."""
        with self._lock:
            if consumer_name not in self._sessions:
                return False
            self._evict(consumer_name)
            return True

    def close(self) -> None:
        """Stop every timer (leadership moved away) and tell every connected consumer to
        register again (`AssignmentListener.controller_lost`); persisted sessions stay for
        the next leader."""
        with self._lock:
            self._closed = True
            self._cancel_retry()
            for session in self._sessions.values():
                self._cancel_grace(session)
                if session.listener is not None:
                    session.listener.controller_lost()
                    session.listener = None

    # --- inputs that change the assignment ----------------------------------------------

    def on_layout_change(self, layout: SegmentLayout) -> None:
        """PIP-468 "Layout Change Propagation": recompute against the new DAG."""
        with self._lock:
            self._layout = layout
            self._rebalance()

    def refresh(self) -> None:
        """Drain state changed (a consumer finished a sealed segment): re-read it and hand
        out the children that became readable."""
        with self._lock:
            self._rebalance()

    # --- reads ---------------------------------------------------------------------------

    def assignments(self) -> dict[str, ConsumerAssignment]:
        with self._lock:
            return {name: s.registration.assignment for name, s in self._sessions.items()}

    def connected(self) -> dict[str, bool]:
        with self._lock:
            return {name: s.listener is not None for name, s in self._sessions.items()}

    def drain_status(self) -> DrainStatus:
        with self._lock:
            assignable = self._assignable()
            return DrainStatus(tuple(s.segment_id for s in assignable),
                               tuple(s.segment_id for s in withheld_segments(self._layout,
                                                                             assignable)))

    # --- internals -----------------------------------------------------------------------

    def _assignable(self) -> list[SegmentInfo]:
        subscription = self._subscription.name

        def drained(segment: SegmentInfo) -> bool:
            if segment.segment_id not in self._drained and self._drain_checker.is_drained(
                    subscription, self._topic.segment_topic(segment)):
                self._drained.add(segment.segment_id)
            return segment.segment_id in self._drained

        segments = assignable_segments(self._layout, ordered=self._subscription.type.ordered,
                                       drained=drained)
        if self._subscription.type.ordered and self._mutants.on("children-before-parent-drained"):
            segments += withheld_segments(self._layout, segments)
            segments.sort(key=lambda s: (s.hash_range.start, s.segment_id))
        return segments

    def _rebalance(self) -> None:
        """Deal the assignable segments out again. It never raises: a failure here (a
        sealed segment's owner down, the metadata store unreachable) is retried on a timer
        until a rebalance succeeds. Raising instead would leave this subscription on its old
        layout for good, since only a later layout change, drain report or membership change
        would deal again, and would stop the controller's step 5 from reaching the
        coordinators after this one."""
        if self._closed:
            return
        try:
            self._deal()
        except Exception:
            log.warning("rebalancing %s/%s at epoch %d failed; trying again in %.1f s",
                        self._topic, self._subscription.name, self._layout.epoch,
                        REBALANCE_RETRY_S, exc_info=True)
            if self._retry is None:
                self._retry = self._scheduler.call_later(REBALANCE_RETRY_S,
                                                         self._retry_rebalance)
            return
        self._cancel_retry()

    def _retry_rebalance(self) -> None:
        with self._lock:
            self._retry = None
            self._rebalance()

    def _cancel_retry(self) -> None:
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None

    def _deal(self) -> None:
        dealt = round_robin(self._assignable(), self._sessions)
        for name, segments in dealt.items():
            session = self._sessions[name]
            assigned = tuple(AssignedSegment(s.segment_id, s.hash_range,
                                             self._topic.segment_topic(s)) for s in segments)
            current = session.registration
            if assigned == current.assignment.assigned_segments and session.persisted:
                continue
            registration = ConsumerRegistration(
                name, current.consumer_id, ConsumerAssignment(self._layout.epoch, assigned))
            self._registrations.save_registration(self._subscription.name, registration)
            session.registration, session.persisted = registration, True
            if session.listener is not None:
                session.listener.assignment_changed(registration.assignment)

    def _start_grace(self, name: str) -> None:
        if self._mutants.on("no-grace-period"):
            self._evict(name)
            return
        session = self._sessions[name]
        self._cancel_grace(session)
        token = session.grace_token = object()
        session.grace_timer = self._scheduler.call_later(
            self._grace_period, lambda: self._grace_expired(name, token))

    def _grace_expired(self, name: str, token: object) -> None:
        with self._lock:
            session = self._sessions.get(name)
            if self._closed or session is None or session.grace_token is not token:
                return
            log.info("consumer %s of %s/%s did not come back within %.1f s: evicted", name,
                     self._topic, self._subscription.name, self._grace_period)
            try:
                self._evict(name)
            except Exception:
                # A timer thread has nobody to raise to; the next leader evicts again.
                log.exception("evicting consumer %s of %s failed", name, self._topic)

    def _cancel_grace(self, session: _Session) -> None:
        session.grace_token = object()
        if session.grace_timer is not None:
            session.grace_timer.cancel()
            session.grace_timer = None

    def _evict(self, name: str) -> None:
        self._registrations.delete_registration(self._subscription.name, name)
        self._cancel_grace(self._sessions.pop(name))
        self._rebalance()
