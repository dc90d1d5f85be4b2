"""The controller against a real ZooKeeper: PIP-468's split and merge steps in order, their
mutants observed, CAS conflicts retried, non-leaders refusing."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from impl.metadata.errors import NotFound
from impl.mutants import NONE, Mutants
from impl.scalable.errors import NotLeader, ScalableTopicNotFound, SegmentNotActive
from impl.scalable.layout import SegmentLayout
from impl.scalable.lifecycle import delete_scalable_topic
from tests.fixtures.recording import Recorder
from tests.scalable.conftest import TOPIC, ScalableTopicDeployment
from tests.scalable.doubles import PushRecorder
from tests.scalable.znode_segments import Call

pytestmark = pytest.mark.zk

Deploy = Callable[[int], ScalableTopicDeployment]
BROKER_A = "pulsar://127.0.0.1:6650"
BROKER_B = "pulsar://127.0.0.1:6651"


def _split_anomalies(segments_calls: list[Call], deployment: ScalableTopicDeployment,
                     parent: int, layout: SegmentLayout) -> set[str]:
    """What a producer or consumer would suffer from how the split was carried out."""
    found = set()
    children = layout.segment(parent).child_ids
    child_topics = {TOPIC.segment_topic(layout.segment(c)) for c in children}
    if any(c.operation == "create" and c.topic in child_topics and c.layout_epoch == layout.epoch
           for c in segments_calls):
        found.add("child visible before its cursors")  # producers write, nobody reads
    if not deployment.segments.state(deployment.segment_topic(parent))["terminated"]:
        found.add("parent writable after the layout moved on")  # dual writes
    for topic in child_topics:
        cursors = deployment.segments.state(topic)["cursors"]
        if set(cursors) != {"sub-a", "sub-b"} or {
                c["initialPosition"] for c in cursors.values()} != {"EARLIEST"}:
            # consumers that attach later start at Latest: early child messages skipped
            found.add("child without cursors at Earliest")
    return found


@pytest.mark.parametrize("mutant, anomaly", [
    (None, None),
    ("metadata-before-children", "child visible before its cursors"),
    ("skip-terminate", "parent writable after the layout moved on"),
    ("child-cursor-at-latest", "child without cursors at Earliest"),
])
def test_split_follows_the_five_steps_in_order(deploy: Deploy, mutant: str | None,
                                               anomaly: str | None) -> None:
    deployment = deploy(2)
    controller = deployment.controller(BROKER_A,
                                       mutants=Mutants.of([mutant]) if mutant else NONE)
    controller.create_subscription("sub-a")
    controller.create_subscription("sub-b")
    layouts: Recorder[SegmentLayout] = Recorder()
    controller.add_layout_listener(layouts)
    deployment.segments.clear()
    parent = deployment.segment_topic(0)

    layout = controller.split_segment(0)

    calls = deployment.segments.calls
    children = [TOPIC.segment_topic(layout.segment(c)) for c in (2, 3)]
    assert layout.segment(0).child_ids == (2, 3) and layout.epoch == 1
    assert deployment.resources.read_layout().layout == layout
    assert layouts.values == [layout]  # step 5
    assert deployment.resources.read_pending_change() is None
    assert _split_anomalies(calls, deployment, 0, layout) == ({anomaly} if anomaly else set())
    if mutant is None:
        assert [(c.operation, c.topic, c.layout_epoch) for c in calls] == [
            ("subscriptions", parent, 0),   # 1. discover
            ("create", children[0], 0),     # 2. children with cursors
            ("create", children[1], 0),
            ("terminate", parent, 0),       # 3. terminate the parent
        ]                                   # 4. CAS: epoch 1 is what the next reader sees


@pytest.mark.parametrize("mutant", [None, "merge-one-parent-subscriptions"])
def test_merge_creates_the_union_of_both_parents_subscriptions(deploy: Deploy,
                                                               mutant: str | None) -> None:
    deployment = deploy(2)
    controller = deployment.controller(BROKER_A,
                                       mutants=Mutants.of([mutant]) if mutant else NONE)
    first, second = deployment.segment_topic(0), deployment.segment_topic(1)
    deployment.segments.create(first, ["only-first"])
    deployment.segments.create(second, ["only-second"])
    deployment.segments.clear()

    layout = controller.merge_segments(0, 1)

    merged = TOPIC.segment_topic(layout.segment(2))
    assert layout.segment(2).parent_ids == (0, 1) and layout.epoch == 1
    copied = [("subscriptions", first), ("subscriptions", second)][:2 if mutant is None else 1]
    assert [(c.operation, c.topic) for c in deployment.segments.calls] == [
        *copied, ("create", merged), ("terminate", first), ("terminate", second)]
    cursors = set(deployment.segments.state(merged)["cursors"])
    if mutant is None:
        assert cursors == {"only-first", "only-second"}
    else:
        assert "only-second" not in cursors, "the mutant loses the second parent's readers"


def test_a_cas_conflict_is_retried_against_the_re_read_layout(deploy: Deploy) -> None:
    deployment = deploy(2)
    controller = deployment.controller(BROKER_A)

    def another_writer(call: Call) -> None:
        if call.operation == "terminate" and not deployment.segments.calls_of("terminate")[1:]:
            current = deployment.resources.read_layout()
            deployment.resources.replace_layout(
                current.layout.with_properties({"owner": "ops"}), current.version)

    deployment.segments.before = another_writer

    layout = controller.split_segment(1)

    stored = deployment.resources.read_layout().layout
    assert stored == layout and stored.epoch == 1
    assert dict(stored.properties) == {"owner": "ops"}, "the other writer's change survives"
    assert len(deployment.segments.calls_of("terminate")) == 2, "the steps ran again"


@pytest.mark.parametrize("mutants", [NONE, Mutants.of(["layout-without-cas"])],
                         ids=["cas", "layout-without-cas"])
def test_a_layout_stored_during_a_split_is_never_overwritten(deploy: Deploy,
                                                              mutants: Mutants) -> None:
    deployment = deploy(2)
    controller = deployment.controller(BROKER_A, mutants=mutants)
    theirs: list[SegmentLayout] = []

    def another_split(call: Call) -> None:
        # Another writer (a deposed leader that has not heard of it yet) stores its split
        # of segment 1 while ours of segment 0 is between its read and its step 4.
        if call.operation == "terminate":
            deployment.segments.before = None
            current = deployment.resources.read_layout()
            theirs.append(current.layout.split_segment(1))
            deployment.resources.replace_layout(theirs[0], current.version)

    deployment.segments.before = another_split

    controller.split_segment(0)

    stored = deployment.resources.read_layout().layout
    their_children = {TOPIC.segment_topic(theirs[0].segment(c)) for c in (2, 3)}
    stored_topics = {TOPIC.segment_topic(s) for s in stored.segments.values()}
    if not mutants.enabled:
        assert stored.epoch == 2 and not stored.segment(1).is_active
        assert their_children <= stored_topics
        return
    # Epoch 1 twice: producers that routed by the other writer's epoch 1 wrote into
    # segment 1's children, which no layout names any more, and segment 1 is ACTIVE again.
    assert stored.epoch == 1 and stored.segment(1).is_active
    assert not their_children & stored_topics


def test_a_non_leader_refuses_mutations_naming_the_leader(deploy: Deploy) -> None:
    deployment = deploy(2)
    leader = deployment.controller(BROKER_A)
    follower = deployment.controller(BROKER_B)

    with pytest.raises(NotLeader, match=f"the leader is {BROKER_A}") as refused:
        follower.split_segment(0)
    assert refused.value.leader_url == BROKER_A
    with pytest.raises(NotLeader):
        follower.register_consumer("sub", "c-1", 1, PushRecorder())
    assert follower.get_layout() == leader.get_layout()
    assert leader.is_leader and not follower.is_leader
    assert deployment.segments.calls_of("terminate") == []


def test_invalid_requests_change_nothing(deploy: Deploy) -> None:
    deployment = deploy(2)
    controller = deployment.controller(BROKER_A)
    controller.split_segment(0)
    deployment.segments.clear()

    with pytest.raises(SegmentNotActive, match="segment 0 is SEALED"):
        controller.split_segment(0)

    assert deployment.segments.calls == []
    assert deployment.resources.read_layout().layout.epoch == 1


def test_consumer_registrations_are_persisted_at_the_documents_path(deploy: Deploy) -> None:
    deployment = deploy(4)
    controller = deployment.controller(BROKER_A)
    pushes = PushRecorder()

    assignment = controller.register_consumer("billing", "c-1", 7, pushes)

    assert assignment.segment_ids == (0, 1, 2, 3)
    stored = deployment.resources.registrations("billing")
    assert [(r.consumer_name, r.consumer_id, r.assignment) for r in stored] == [
        ("c-1", 7, assignment)]
    data = deployment.observer.get(
        "/topics/acme/orders/payments/subscriptions/billing/consumers/c-1").data
    assert b'"assignedSegments"' in data and b'"underlyingTopicName"' in data
    assert controller.unregister_consumer("billing", "c-1")
    with pytest.raises(NotFound):
        deployment.observer.get(
            "/topics/acme/orders/payments/subscriptions/billing/consumers/c-1")


def test_a_stream_subscription_gets_children_once_the_parent_drained(deploy: Deploy) -> None:
    deployment = deploy(1)
    controller = deployment.controller(BROKER_A)
    controller.create_subscription("ordered")
    pushes = PushRecorder()
    controller.register_consumer("ordered", "c-1", 1, pushes)
    parent = deployment.segment_topic(0)

    controller.split_segment(0)
    assert controller.drain_status("ordered").withheld == (1, 2)
    assert controller.assignments("ordered")["c-1"].segment_ids == (0,)

    deployment.segments.mark_drained(parent, "ordered")
    controller.drain_changed("ordered")

    assert controller.assignments("ordered")["c-1"].segment_ids == (1, 2)
    assert [a.segment_ids for a in pushes.values] == [(1, 2)]


def test_any_broker_watching_the_layout_sees_each_epoch(deploy: Deploy) -> None:
    deployment = deploy(2)
    controller = deployment.controller(BROKER_A)
    seen: Recorder[SegmentLayout | None] = Recorder()
    watch = deployment.resources.watch_layout(seen)
    seen.wait_for(lambda layouts: [layout.epoch for layout in layouts if layout] == [0])

    controller.split_segment(1)
    controller.merge_segments(0, 2)

    final = seen.wait_for(lambda layouts: layouts[-1] is not None and layouts[-1].epoch == 2)
    assert final[-1] == controller.get_layout()
    watch.cancel()


def test_deleting_a_topic_removes_its_segments_and_metadata(deploy: Deploy) -> None:
    deployment = deploy(2)
    controller = deployment.controller(BROKER_A)
    controller.split_segment(0)
    topics = [TOPIC.segment_topic(s) for s in controller.get_layout().segments.values()]
    controller.close()

    delete_scalable_topic(deployment.resources, deployment.segments)

    assert [deployment.segments.state(t) for t in topics] == [None] * 4
    with pytest.raises(ScalableTopicNotFound):
        deployment.resources.read_layout()


def test_children_of_a_plan_overtaken_by_another_split_are_deleted(deploy: Deploy) -> None:
    deployment = deploy(2)
    controller = deployment.controller(BROKER_A)
    planned = [TOPIC.segment_topic(s)
               for s in SegmentLayout.initial(2).split_segment(0).active_segments[:2]]

    def another_split(call: Call) -> None:
        if call.operation == "terminate":
            deployment.segments.before = None
            current = deployment.resources.read_layout()
            deployment.resources.replace_layout(current.layout.split_segment(1),
                                                current.version)

    deployment.segments.before = another_split

    layout = controller.split_segment(0)

    assert layout.epoch == 2 and layout.segment(0).child_ids == (4, 5)
    assert [deployment.segments.state(t) for t in planned] == [None, None]
    assert all(deployment.segments.state(TOPIC.segment_topic(layout.segment(c)))
               for c in (4, 5))


def test_a_split_reaches_every_subscription_while_an_ancestors_owner_is_down(
        deploy: Deploy, monkeypatch: pytest.MonkeyPatch) -> None:
    """The owner of a sealed, undrained ancestor does not answer whether it is drained.
    A split elsewhere must still commit, report success, and hand the new layout to every
    subscription, not only to those before the first failing one; once the owner answers
    again, the consumers get their segments without any further layout change or drain
    report (a starquake run once left a stream subscription unassigned on two new
    segments for good this way)."""
    deployment = deploy(2)
    controller = deployment.controller(BROKER_A)
    for subscription in ("queue", "stream"):  # the coordinators are asked in this order
        controller.create_subscription(subscription)
    pushes = {s: PushRecorder() for s in ("queue", "stream")}
    for subscription, recorder in pushes.items():
        controller.register_consumer(subscription, f"{subscription}-0", 1, recorder)
    controller.split_segment(0)
    owner_down = {deployment.segment_topic(0)}
    answers = deployment.segments.is_drained

    def is_drained(subscription: str, segment_topic: str) -> bool:
        if segment_topic in owner_down:
            raise ConnectionError(f"the owner of {segment_topic} refused the connection")
        return answers(subscription, segment_topic)

    monkeypatch.setattr(deployment.segments, "is_drained", is_drained)

    layout = controller.split_segment(1)

    assert layout.epoch == 2
    for segment in (0, 1):
        for subscription in ("queue", "stream"):
            deployment.segments.mark_drained(deployment.segment_topic(segment), subscription)
    owner_down.clear()
    for subscription, recorder in pushes.items():
        final = recorder.wait_for(
            lambda values: bool(values) and values[-1].segment_ids == (2, 3, 4, 5))
        assert final[-1].layout_epoch == 2, subscription
