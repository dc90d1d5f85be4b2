"""The per-topic controller (PIP-468 "ScalableTopicController"): leader-elected, the only
writer of the segment layout and the only place consumers register.

Split and merge run PIP-468's five steps in order: (1) discover the parents'
subscriptions, (2) create the children with a cursor at Earliest for each, (3) terminate
the parents, (4) compare-and-set the layout, (5) notify. Before step 1 the leader records
the change as pending in the store, and deletes that record after step 5; a leader that
finds a record (after a failover, or after its own write of unknown outcome) repeats the
steps, which are all idempotent, so an interrupted change is always rolled forward and a
terminated parent never stays active in the layout.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

from impl.metadata.election import LeaderElection, current_leader
from impl.metadata.errors import VersionConflict
from impl.metadata.store import MetadataStore
from impl.mutants import NONE, Mutants
from impl.scalable.changes import LayoutChange, LayoutOperation, OperationKind, PendingChange
from impl.scalable.coordinator import DEFAULT_GRACE_PERIOD, DrainStatus, SubscriptionCoordinator
from impl.scalable.errors import (
    LayoutUpdateConflict,
    LeadershipLost,
    NotLeader,
    SubscriptionNotFound,
)
from impl.scalable.layout import SegmentLayout
from impl.scalable.resources import ScalableTopicResources
from impl.scalable.scheduler import Scheduler, TimerScheduler
from impl.scalable.segment_topics import SegmentDrainChecker, SegmentTopics
from impl.scalable.sessions import (
    AssignmentListener,
    ConsumerAssignment,
    SubscriptionMetadata,
    SubscriptionType,
)
from impl.storage.api import InitialPosition
from wire.topic_names import ScalableTopicName

log = logging.getLogger(__name__)

T = TypeVar("T")
_NAP = 0.05
"""Seconds of one nap of `ControllerConfig.step_pause`."""
LayoutListener = Callable[[SegmentLayout], None]


@dataclass(frozen=True)
class ControllerConfig:
    broker_url: str
    """This broker's service URL: the election value clients connect to."""
    grace_period: float = DEFAULT_GRACE_PERIOD
    """Seconds a disconnected consumer keeps its session."""
    layout_update_attempts: int = 10
    """Compare-and-set attempts of one split or merge before giving up."""
    leader_wait: float = 10.0
    """How long a request waits for a just-elected leader to finish restoring."""
    step_pause: float = 0.0
    """Seconds a change holds before its layout compare-and-set (step 4): after the
    parents were terminated and after its leader's last check that it still leads. A
    fault control, never set in production, that widens two windows enough for a test
    run's nemesis to hit: a leader that dies there leaves a change half done (PIP-468's
    roll-forward, the mutant `no-roll-forward`), and one frozen there past its session
    resumes to write a layout its successor has since replaced (the compare-and-set, the
    mutant `layout-without-cas`). The pause passes in short naps, so a process frozen in
    it resumes with the rest of the pause still ahead, as one frozen mid-work would."""


class ScalableTopicController:
    """One broker's controller for one scalable topic. Every broker that serves the topic
    may hold one; the elected one mutates, the others answer reads and refuse mutations
    with `NotLeader` naming the leader."""

    def __init__(
        self,
        store: MetadataStore,
        topic: ScalableTopicName,
        segment_topics: SegmentTopics,
        drain_checker: SegmentDrainChecker,
        config: ControllerConfig,
        *,
        mutants: Mutants = NONE,
        scheduler: Scheduler | None = None,
    ) -> None:
        self.topic = topic
        self._store = store
        self._resources = ScalableTopicResources(store, topic)
        self._segment_topics = segment_topics
        self._drain_checker = drain_checker
        self._config = config
        self._mutants = mutants
        self._scheduler = scheduler or TimerScheduler()
        self._election = LeaderElection(store, self._resources.controller_path,
                                        config.broker_url, on_elected=self._elected,
                                        on_lost=self._lost)
        # `_state` guards the leadership term and what belongs to it; `_operations`
        # serialises everything a leader does (mutations, takeover) so steps never mix.
        self._state = threading.Condition()
        self._operations = threading.RLock()
        self._term = 0
        self._restored_term: int | None = None
        self._layout: SegmentLayout | None = None
        self._coordinators: dict[str, SubscriptionCoordinator] = {}
        self._layout_listeners: list[LayoutListener] = []
        self._takeovers = ThreadPoolExecutor(1, thread_name_prefix=f"controller-{topic}")

    # --- lifecycle -----------------------------------------------------------------------

    def initialize(self) -> None:
        """Load the layout, then campaign (PIP-468 `initialize()`). When this broker wins,
        returns once the state is restored and any interrupted change rolled forward."""
        self._layout = self._resources.read_layout().layout
        self._election.start()
        if self._election.is_leader:
            self._await_leadership()

    def close(self) -> None:
        """Withdraw from the election (another broker takes over at once) and stop."""
        self._election.stop()
        self._lost()
        self._takeovers.shutdown(wait=True)

    # --- reads ---------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        with self._state:
            return self._restored_term == self._term and self._election.is_leader

    def leader_broker_url(self) -> str | None:
        """The leader's broker URL, as clients learn it (PIP-468 `getLeaderBrokerUrl()`)."""
        return self._election.leader or current_leader(self._store,
                                                       self._resources.controller_path)

    def get_layout(self) -> SegmentLayout:
        """The leader's current layout; on other brokers the stored one."""
        with self._state:
            if self._restored_term == self._term and self._layout is not None:
                return self._layout
        return self._resources.read_layout().layout

    def assignments(self, subscription: str) -> dict[str, ConsumerAssignment]:
        return self._leader_coordinator(subscription).assignments()

    def drain_status(self, subscription: str) -> DrainStatus:
        """Which segments an ordered subscription reads now and which wait for a parent."""
        return self._leader_coordinator(subscription).drain_status()

    def add_layout_listener(self, listener: LayoutListener) -> Callable[[], None]:
        """Call `listener(layout)` after each split or merge this controller completes
        (step 5); returns the function that removes it."""
        with self._state:
            self._layout_listeners.append(listener)
        return lambda: self._remove_layout_listener(listener)

    def _remove_layout_listener(self, listener: LayoutListener) -> None:
        with self._state:
            self._layout_listeners.remove(listener)

    # --- layout mutations ----------------------------------------------------------------

    def split_segment(self, segment_id: int) -> SegmentLayout:
        """Split an active segment at its midpoint; returns the new layout."""
        return self._change_layout(LayoutOperation.split(segment_id))

    def merge_segments(self, first_id: int, second_id: int) -> SegmentLayout:
        """Merge two adjacent active segments; returns the new layout."""
        return self._change_layout(LayoutOperation.merge(first_id, second_id))

    def _change_layout(self, operation: LayoutOperation) -> SegmentLayout:
        def change(term: int) -> SegmentLayout:
            self._finish_pending(term)
            return self._execute(operation, term)
        return self._as_leader(str(operation), change)

    # --- subscriptions and consumers -----------------------------------------------------

    def create_subscription(self, subscription: str,
                            subscription_type: SubscriptionType = SubscriptionType.STREAM
                            ) -> SubscriptionMetadata:
        """Create the subscription on the topic and a cursor for it on every active segment,
        at Latest as Pulsar's admin API does. Repeating it changes nothing."""
        def create(term: int) -> SubscriptionMetadata:
            coordinator = self._coordinator_for(subscription, subscription_type, term)
            for segment in self._current_layout().active_segments:
                self._segment_topics.create(self.topic.segment_topic(segment), [subscription],
                                            InitialPosition.LATEST)
            return coordinator.subscription
        return self._as_leader(f"creating subscription {subscription}", create)

    def register_consumer(self, subscription: str, consumer_name: str, consumer_id: int,
                          listener: AssignmentListener,
                          subscription_type: SubscriptionType = SubscriptionType.STREAM
                          ) -> ConsumerAssignment:
        """Register (or resume) a consumer's session; returns its assignment. Later changes
        reach `listener`. The subscription's stored type wins over `subscription_type`."""
        def register(term: int) -> ConsumerAssignment:
            coordinator = self._coordinator_for(subscription, subscription_type, term)
            assignment = coordinator.register(consumer_name, consumer_id, listener)
            self._ensure_term(term, f"registering {consumer_name}")
            return assignment
        return self._as_leader(f"registering {consumer_name}", register)

    def unregister_consumer(self, subscription: str, consumer_name: str) -> bool:
        """End a consumer's session now; its segments go to the others."""
        return self._as_leader(f"unregistering {consumer_name}",
                               lambda term: self._leader_coordinator(subscription)
                               .unregister(consumer_name))

    def consumer_disconnected(self, subscription: str, consumer_name: str,
                              consumer_id: int) -> None:
        """The consumer's connection to this broker closed: its grace period starts. Ignored
        when this broker does not lead (the session is not ours to keep)."""
        with self._state:
            coordinator = self._coordinators.get(subscription)
        if coordinator is not None:
            coordinator.disconnected(consumer_name, consumer_id)

    def drain_changed(self, subscription: str) -> None:
        """A sealed segment may have drained for `subscription`: re-assign its children."""
        self._leader_coordinator(subscription).refresh()

    # --- leadership ----------------------------------------------------------------------

    def _elected(self) -> None:
        with self._state:
            self._term += 1
            term = self._term
        self._takeovers.submit(self._take_over, term)

    def _lost(self) -> None:
        with self._state:
            self._term += 1
            self._restored_term = None
            coordinators, self._coordinators = self._coordinators, {}
            self._state.notify_all()
        for coordinator in coordinators.values():
            coordinator.close()

    def _take_over(self, term: int) -> None:
        """PIP-468 failover step 4: restore layout, subscriptions and sessions from the
        store, then finish any interrupted change. Retried while the term lasts."""
        while self._is_current(term):
            try:
                with self._operations:
                    self._restore(term)
                return
            except LeadershipLost:
                return
            except Exception:
                log.exception("controller of %s could not take over; retrying", self.topic)
                time.sleep(0.5)

    def _restore(self, term: int) -> None:
        layout = self._resources.read_layout().layout
        coordinators = {}
        for name in self._resources.subscription_names():
            coordinator = self._new_coordinator(self._resources.read_subscription(name), layout)
            coordinator.restore(self._resources.registrations(name))
            coordinators[name] = coordinator
        with self._state:
            current = self._term == term
            if current:
                # A retried takeover replaces what its failed attempt installed.
                replaced, self._coordinators = self._coordinators, coordinators
                self._layout = layout
        for coordinator in (replaced if current else coordinators).values():
            coordinator.close()
        if not current:
            raise LeadershipLost(str(self.topic), "takeover")
        self._finish_pending(term)
        with self._state:
            if self._term == term:
                self._restored_term = term
                self._state.notify_all()
        log.info("controller of %s leads at epoch %d with %d subscriptions", self.topic,
                 self._current_layout().epoch, len(coordinators))

    def _is_current(self, term: int) -> bool:
        with self._state:
            return self._term == term

    def _ensure_term(self, term: int, what: str) -> None:
        if not (self._is_current(term) and self._election.is_leader):
            raise LeadershipLost(str(self.topic), what)

    def _await_leadership(self) -> int:
        """The restored term this request runs in; `NotLeader` naming the leader when this
        broker does not lead (waiting up to `leader_wait` for a takeover to finish)."""
        deadline = time.monotonic() + self._config.leader_wait
        with self._state:
            while self._restored_term != self._term or not self._election.is_leader:
                remaining = deadline - time.monotonic()
                if not self._election.is_leader or remaining <= 0:
                    break
                self._state.wait(remaining)
            else:
                return self._term
        raise NotLeader(str(self.topic), self.leader_broker_url())

    def _as_leader(self, what: str, action: Callable[[int], T]) -> T:
        # PIP-468 "Non-leader brokers": the checkLeader() guard of every mutation.
        term = self._await_leadership()
        with self._operations:
            self._ensure_term(term, what)
            return action(term)

    # --- the split/merge protocol --------------------------------------------------------

    def _execute(self, operation: LayoutOperation, term: int) -> SegmentLayout:
        for _ in range(self._config.layout_update_attempts):
            self._ensure_term(term, str(operation))
            base = self._resources.read_layout()
            change = LayoutChange.plan(operation, base.layout)
            self._record_pending(change)
            try:
                self._run_steps(change, base.version, term)
            except VersionConflict:
                # Someone wrote the layout since we read it: re-read, re-plan, repeat the
                # (idempotent) steps against what is there now.
                log.info("layout of %s changed during %s; retrying", self.topic, operation)
                continue
            self._resources.clear_pending_change()
            self._publish(change.result)
            return change.result
        raise LayoutUpdateConflict(str(self.topic), self._config.layout_update_attempts)

    def _run_steps(self, change: LayoutChange, version: int, term: int) -> None:
        what = str(change.operation)
        subscriptions = self._discover_subscriptions(change)

        def create_children() -> None:
            # Step 2: cursors at Earliest are safe, the children are empty; they must exist
            # before the CAS makes the children visible to producers. The mutant leaves the
            # cursors to the consumers, whose subscribe creates them at Latest when they
            # attach, after the producers have moved on to the children: what the children
            # took in between is skipped.
            cursors = ([] if self._mutants.on("child-cursor-at-latest")
                       else sorted(subscriptions))
            for child in change.children:
                self._segment_topics.create(self.topic.segment_topic(child), cursors,
                                            InitialPosition.EARLIEST)

        def terminate_parents() -> None:
            # Step 3: before the CAS, so no moment has both a parent and a child writable;
            # a merge terminates its parents one after the other.
            if self._mutants.on("skip-terminate"):
                return
            for parent in change.parents:
                self._segment_topics.terminate(self.topic.segment_topic(parent))

        def update_layout() -> None:
            # Step 4, a compare-and-set on the version this plan was made against: a layout
            # anyone stored since then makes it fail, and the change is planned again (by a
            # deposed leader, which then finds it no longer leads). The mutant writes
            # whatever version is there, overwriting that layout.
            self._hold()
            expected = -1 if self._mutants.on("layout-without-cas") else version
            self._resources.replace_layout(change.result, expected)

        steps = [create_children, terminate_parents, update_layout]
        if self._mutants.on("metadata-before-children"):
            steps = [update_layout, create_children, terminate_parents]
        for step in steps:
            self._ensure_term(term, what)
            step()

    def _hold(self) -> None:
        """`ControllerConfig.step_pause`, in naps of about `_NAP` seconds."""
        naps = math.ceil(self._config.step_pause / _NAP)
        for _ in range(naps):
            time.sleep(self._config.step_pause / naps)

    def _discover_subscriptions(self, change: LayoutChange) -> set[str]:
        # Step 1; a merge takes the union of both parents' subscriptions.
        parents = change.parents
        if (change.operation.kind == OperationKind.MERGE
                and self._mutants.on("merge-one-parent-subscriptions")):
            parents = parents[:1]
        found: set[str] = set()
        for parent in parents:
            found |= self._segment_topics.subscriptions(self.topic.segment_topic(parent))
        return found

    def _record_pending(self, change: LayoutChange) -> None:
        pending = PendingChange.of(change)
        previous = self._resources.read_pending_change()
        if previous == pending:
            return
        if previous is not None:
            self._delete_orphans(previous, change.result)
        self._resources.write_pending_change(pending)

    def _delete_orphans(self, pending: PendingChange, layout: SegmentLayout) -> None:
        """Child topics of a superseded plan: never in any layout, so no client knows them."""
        kept = {self.topic.segment_topic(s) for s in layout.segments.values()}
        for child in pending.children:
            topic = self.topic.segment_topic(child)
            if topic not in kept:
                self._segment_topics.delete(topic)

    def _finish_pending(self, term: int) -> None:
        """Roll forward a change that a previous leader (or a write of unknown outcome)
        left half done."""
        pending = self._resources.read_pending_change()
        if pending is None:
            return
        layout = self._resources.read_layout().layout
        parents = [layout.segments.get(i) for i in pending.operation.segment_ids]
        # The parents still ACTIVE: the CAS never landed, though step 3 (PIP-468: parents
        # terminated before the CAS) may have sealed their ledgers, and only the layout
        # that seals them lets their hashes be written again. The mutant treats the change
        # as abandoned instead and only cleans up after it.
        if (all(p is not None and p.is_active for p in parents)
                and not self._mutants.on("no-roll-forward")):
            log.info("controller of %s rolls %s forward", self.topic, pending.operation)
            self._execute(pending.operation, term)
            return
        # The CAS landed (or the layout moved on another way): step 5 and clean up.
        self._delete_orphans(pending, layout)
        self._resources.clear_pending_change()
        self._publish(layout)

    def _publish(self, layout: SegmentLayout) -> None:
        """Step 5: every coordinator re-assigns, then layout listeners hear of it."""
        with self._state:
            self._layout = layout
            coordinators = list(self._coordinators.values())
            listeners = list(self._layout_listeners)
        for coordinator in coordinators:
            coordinator.on_layout_change(layout)
        for listener in listeners:
            try:
                listener(layout)
            except Exception:
                log.exception("layout listener of %s failed", self.topic)

    # --- coordinators --------------------------------------------------------------------

    def _current_layout(self) -> SegmentLayout:
        with self._state:
            assert self._layout is not None, "initialize() loads the layout first"
            return self._layout

    def _new_coordinator(self, subscription: SubscriptionMetadata, layout: SegmentLayout
                         ) -> SubscriptionCoordinator:
        return SubscriptionCoordinator(
            self.topic, subscription, layout, registrations=self._resources,
            drain_checker=self._drain_checker, scheduler=self._scheduler,
            grace_period=self._config.grace_period, mutants=self._mutants)

    def _coordinator_for(self, subscription: str, subscription_type: SubscriptionType,
                         term: int) -> SubscriptionCoordinator:
        """The subscription's coordinator, created (and its metadata written) on first use."""
        with self._state:
            coordinator = self._coordinators.get(subscription)
        if coordinator is not None:
            return coordinator
        stored = self._resources.ensure_subscription(
            SubscriptionMetadata(subscription, subscription_type))
        coordinator = self._new_coordinator(stored, self._current_layout())
        with self._state:
            if self._term == term:
                return self._coordinators.setdefault(subscription, coordinator)
        coordinator.close()
        raise LeadershipLost(str(self.topic), f"creating subscription {subscription}")

    def _leader_coordinator(self, subscription: str) -> SubscriptionCoordinator:
        self._await_leadership()
        with self._state:
            coordinator = self._coordinators.get(subscription)
        if coordinator is None:
            raise SubscriptionNotFound(str(self.topic), subscription)
        return coordinator
