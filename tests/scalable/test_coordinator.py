"""SubscriptionCoordinator: round-robin assignment, sessions with a grace period, ordered
subscriptions that wait for parents to drain; a state machine plus the mutants' twins."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from impl.mutants import NONE, Mutants
from impl.scalable.coordinator import SubscriptionCoordinator
from impl.scalable.layout import SegmentInfo, SegmentLayout
from impl.scalable.sessions import SubscriptionMetadata, SubscriptionType
from tests.scalable.doubles import DrainedSet, ManualScheduler, RecordingConnection, SessionLog
from wire.topic_names import ScalableTopicName

TOPIC = ScalableTopicName("acme", "orders", "payments")
SUBSCRIPTION = "billing"
NAMES = ("c-a", "c-b", "c-c", "c-d")


class Harness:
    """A coordinator with its surroundings, shared by the state machine and the examples."""

    def __init__(self, layout: SegmentLayout, *, ordered: bool = True,
                 mutants: Mutants = NONE) -> None:
        self.layout = layout
        self.drain = DrainedSet()
        self.timers = ManualScheduler()
        self.sessions = SessionLog()
        self.connections: dict[str, RecordingConnection] = {}
        self.connection_ids: dict[str, int] = {}
        kind = SubscriptionType.STREAM if ordered else SubscriptionType.CHECKPOINT
        self.coordinator = SubscriptionCoordinator(
            TOPIC, SubscriptionMetadata(SUBSCRIPTION, kind), layout, registrations=self.sessions,
            drain_checker=self.drain, scheduler=self.timers, grace_period=60.0, mutants=mutants)

    def connect(self, name: str) -> RecordingConnection:
        connection_id = max(self.connection_ids.values(), default=0) + 1
        connection = RecordingConnection(name)
        connection.pushes.append(self.coordinator.register(name, connection_id, connection))
        self.connections[name], self.connection_ids[name] = connection, connection_id
        return connection

    def disconnect(self, name: str) -> None:
        self.connections.pop(name).open = False
        self.coordinator.disconnected(name, self.connection_ids[name])

    def change_layout(self, layout: SegmentLayout) -> None:
        self.layout = layout
        self.coordinator.on_layout_change(layout)

    def mark_drained(self, segment: SegmentInfo) -> None:
        self.drain.drained.add((SUBSCRIPTION, TOPIC.segment_topic(segment)))
        self.coordinator.refresh()

    def is_drained(self, segment_id: int) -> bool:
        """Drained as the ordering rule means it: read to its end, and every ancestor too
        (an empty segment is at its end unread, before its parents may be)."""
        segment = self.layout.segments.get(segment_id)
        return segment is None or (
            not segment.is_active
            and (SUBSCRIPTION, TOPIC.segment_topic(segment)) in self.drain.drained
            and all(self.is_drained(p) for p in segment.parent_ids))

    def owners(self) -> dict[int, list[str]]:
        owners: dict[int, list[str]] = {}
        for name, assignment in self.coordinator.assignments().items():
            for segment_id in assignment.segment_ids:
                owners.setdefault(segment_id, []).append(name)
        return owners

    def pushes(self) -> int:
        return sum(len(c.pushes) for c in self.connections.values())


class CoordinatorMachine(RuleBasedStateMachine):
    harness: Harness

    @initialize(segments=st.integers(1, 4), ordered=st.booleans())
    def create(self, segments: int, ordered: bool) -> None:
        self.harness = Harness(SegmentLayout.initial(segments), ordered=ordered)
        self.ordered = ordered
        self.members: set[str] = set()

    @rule(name=st.sampled_from(NAMES))
    def register_or_reconnect(self, name: str) -> None:
        h = self.harness
        if name in h.connections:
            return
        before = {n: c.pushes[-1] for n, c in h.connections.items()}
        known = name in self.members
        previous = h.coordinator.assignments().get(name)
        connection = h.connect(name)
        self.members.add(name)
        if known:
            # Resuming a session disturbs nobody and gives back the same segments.
            assert connection.pushes == [previous]
            assert {n: h.connections[n].pushes[-1] for n in before} == before

    @precondition(lambda self: self.harness.connections)
    @rule(data=st.data())
    def disconnect(self, data: st.DataObject) -> None:
        h = self.harness
        name = data.draw(st.sampled_from(sorted(h.connections)))
        assignments = h.coordinator.assignments()
        h.disconnect(name)
        assert h.coordinator.assignments() == assignments, "a disconnect alone moves nothing"

    @precondition(lambda self: self.members)
    @rule(data=st.data())
    def unregister(self, data: st.DataObject) -> None:
        h = self.harness
        name = data.draw(st.sampled_from(sorted(self.members)))
        if name in h.connections:
            h.connections.pop(name).open = False
        assert h.coordinator.unregister(name)
        self.members.discard(name)

    @rule()
    def grace_period_passes(self) -> None:
        h = self.harness
        h.timers.fire_all()
        self.members &= set(h.connections)

    @rule(data=st.data())
    def split(self, data: st.DataObject) -> None:
        h = self.harness
        segment = data.draw(st.sampled_from(h.layout.active_segments))
        h.change_layout(h.layout.split_segment(segment.segment_id))

    @precondition(lambda self: len(self.harness.layout.active_segments) > 1)
    @rule(data=st.data())
    def merge(self, data: st.DataObject) -> None:
        h = self.harness
        index = data.draw(st.integers(0, len(h.layout.active_segments) - 2))
        low, high = h.layout.active_segments[index:index + 2]
        h.change_layout(h.layout.merge_segments(low.segment_id, high.segment_id))

    @precondition(lambda self: any(not s.is_active for s in self.harness.layout.segments.values()))
    @rule(data=st.data())
    def drain(self, data: st.DataObject) -> None:
        h = self.harness
        sealed = [s for s in h.layout.segments.values() if not s.is_active]
        h.mark_drained(data.draw(st.sampled_from(sealed)))

    @rule()
    def nothing_changed(self) -> None:
        h = self.harness
        pushes, writes = h.pushes(), h.sessions.writes
        h.coordinator.refresh()
        h.change_layout(h.layout)
        assert (h.pushes(), h.sessions.writes) == (pushes, writes), "unchanged inputs, no churn"

    def _readable(self, segment: SegmentInfo) -> bool:
        """What this subscription may read now, stated from the rules, not the code."""
        h = self.harness
        if not self.ordered:
            return segment.is_active
        return (not h.is_drained(segment.segment_id)
                and all(h.is_drained(p) for p in segment.parent_ids))

    @invariant()
    def every_readable_segment_has_exactly_one_consumer(self) -> None:
        h = self.harness
        owners = h.owners()
        readable = {s.segment_id for s in h.layout.segments.values() if self._readable(s)}
        assert set(h.coordinator.assignments()) == self.members
        if self.members:
            assert set(owners) == readable
            assert all(len(names) == 1 for names in owners.values()), owners
        else:
            assert owners == {}

    @invariant()
    def round_robin_is_balanced(self) -> None:
        sizes = [len(a.segment_ids) for a in self.harness.coordinator.assignments().values()]
        assert not sizes or max(sizes) - min(sizes) <= 1

    @invariant()
    def connected_consumers_know_their_assignment_and_it_is_persisted(self) -> None:
        h = self.harness
        assignments = h.coordinator.assignments()
        for name, connection in h.connections.items():
            assert connection.pushes[-1].segment_ids == assignments[name].segment_ids
            pushed = [p.segment_ids for p in connection.pushes]
            assert all(a != b for a, b in itertools.pairwise(pushed)), "a push changes something"
        assert {n: r.assignment for (_, n), r in h.sessions.saved.items()} == assignments
        assert h.coordinator.connected() == {n: n in h.connections for n in self.members}


CoordinatorMachine.TestCase.settings = settings(max_examples=120, stateful_step_count=30,
                                                deadline=None)
TestCoordinatorMachine = CoordinatorMachine.TestCase


def _split_with_two_consumers(mutants: Mutants = NONE) -> Harness:
    harness = Harness(SegmentLayout.initial(2), mutants=mutants)
    harness.connect("c-a")
    harness.connect("c-b")
    harness.change_layout(harness.layout.split_segment(0))
    return harness


def test_children_wait_until_their_parent_is_drained() -> None:
    harness = _split_with_two_consumers()
    status = harness.coordinator.drain_status()
    assert status.assignable == (0, 1) and status.withheld == (2, 3)
    pushes_to_a = list(harness.connections["c-a"].pushes)

    harness.mark_drained(harness.layout.segment(0))

    assert harness.coordinator.drain_status() == type(status)((2, 3, 1), ())
    assert sorted(harness.owners()) == [1, 2, 3]
    assert harness.connections["c-a"].pushes[len(pushes_to_a):], "the change was pushed"


def test_an_empty_segment_at_its_end_holds_its_children_until_its_parents_drain() -> None:
    """Segment 2 was split before anything was written to it: it is at its end though
    nobody read it. Its children wait for segment 0 too, or a key's messages in 0 would
    be read after its messages in 4 or 5."""
    harness = _split_with_two_consumers()
    harness.change_layout(harness.layout.split_segment(2))
    harness.mark_drained(harness.layout.segment(2))
    assert sorted(harness.owners()) == [0, 1]

    harness.mark_drained(harness.layout.segment(0))

    assert sorted(harness.owners()) == [1, 3, 4, 5]


def test_mutant_children_before_parent_drained_hands_out_children_early() -> None:
    harness = _split_with_two_consumers(Mutants.of(["children-before-parent-drained"]))
    owners = harness.owners()
    assert 0 in owners and {2, 3} <= set(owners), "parent and children read at once"


def test_a_disconnected_consumer_keeps_its_segments_until_the_grace_period_ends() -> None:
    harness = Harness(SegmentLayout.initial(4))
    harness.connect("c-a")
    b = harness.connect("c-b")
    harness.disconnect("c-a")
    assert len(b.pushes) == 1 and harness.sessions.saved[(SUBSCRIPTION, "c-a")]

    harness.timers.fire_all()

    assert b.pushes[-1].segment_ids == (0, 1, 2, 3)
    assert (SUBSCRIPTION, "c-a") not in harness.sessions.saved


def test_a_closing_coordinator_sends_its_connected_consumers_to_register_again() -> None:
    """Leadership lost: the sessions stay in the store, but nothing here will push to the
    connected consumers again, so they must register anew (with the leader, which may be
    this broker again a moment later); a consumer already gone is not told."""
    harness = Harness(SegmentLayout.initial(2))
    a = harness.connect("c-a")
    b = harness.connect("c-b")
    harness.disconnect("c-b")
    harness.coordinator.close()
    assert a.told_to_register_again and not b.told_to_register_again
    assert set(harness.sessions.saved) == {(SUBSCRIPTION, "c-a"), (SUBSCRIPTION, "c-b")}


def test_a_disconnect_of_a_replaced_connection_is_ignored() -> None:
    harness = Harness(SegmentLayout.initial(2))
    harness.connect("c-a")
    old_id = harness.connection_ids["c-a"]
    harness.connect("c-b")
    harness.connect("c-a")  # reconnect before the old connection's close arrives
    harness.coordinator.disconnected("c-a", old_id)
    assert harness.coordinator.connected() == {"c-a": True, "c-b": True}
    assert harness.timers.pending() == []


@pytest.mark.parametrize("mutants, churn", [(NONE, False),
                                            (Mutants.of(["no-grace-period"]), True)])
def test_a_quick_reconnect_disturbs_nobody_unless_the_grace_period_is_gone(
        mutants: Mutants, churn: bool) -> None:
    harness = Harness(SegmentLayout.initial(4), mutants=mutants)
    harness.connect("c-a")
    b = harness.connect("c-b")

    harness.disconnect("c-a")
    harness.connect("c-a")

    assert (len(b.pushes) > 1) == churn
