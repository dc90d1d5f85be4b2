"""Controller failover against a real ZooKeeper: a leader lost in the middle of a split is
replaced and the new leader rolls the split forward; consumer sessions survive a failover
for the grace period and end after it."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from impl.metadata.errors import MetadataError
from impl.mutants import NONE, Mutants
from impl.scalable.controller import ScalableTopicController
from impl.scalable.errors import ScalableTopicError
from nemesis.session_expiry import expire_session_of
from tests.fixtures.recording import eventually
from tests.scalable.conftest import TOPIC, ScalableTopicDeployment
from tests.scalable.doubles import PushRecorder
from tests.scalable.znode_segments import Call

pytestmark = pytest.mark.zk

Deploy = Callable[[int], ScalableTopicDeployment]
BROKER_A = "pulsar://127.0.0.1:6650"
BROKER_B = "pulsar://127.0.0.1:6651"


def _assert_split_completed(deployment: ScalableTopicDeployment, subscriptions: set[str]
                            ) -> None:
    """Segment 0 of a two-segment topic was split once, completely."""
    layout = deployment.resources.read_layout().layout
    assert layout.epoch == 1 and layout.next_segment_id == 4
    assert layout.segment(0).child_ids == (2, 3)
    assert deployment.segments.state(deployment.segment_topic(0))["terminated"]
    for child in (2, 3):
        cursors = deployment.segments.state(TOPIC.segment_topic(layout.segment(child)))["cursors"]
        assert {n: c["initialPosition"] for n, c in cursors.items()} == dict.fromkeys(
            subscriptions, "EARLIEST")
    assert deployment.resources.read_pending_change() is None


def _fault_at_first(deployment: ScalableTopicDeployment, operation: str,
                    fault: Callable[[], None]) -> None:
    """Run `fault` once, as the first `operation` call reaches the segment topics."""
    def hook(call: Call) -> None:
        if call.operation == operation:
            deployment.segments.before = None
            fault()
    deployment.segments.before = hook


def _two_brokers(deploy: Deploy, *subscriptions: str, successor: Mutants = NONE
                 ) -> tuple[ScalableTopicDeployment, ScalableTopicController,
                            ScalableTopicController]:
    """A leader on broker A, and on broker B a candidate with the `successor` mutants."""
    deployment = deploy(2)
    leader = deployment.controller(BROKER_A)
    other = deployment.controller(BROKER_B, mutants=successor)
    for subscription in subscriptions:
        leader.create_subscription(subscription)
    return deployment, leader, other


@pytest.mark.parametrize("mutants", [NONE, Mutants.of(["no-roll-forward"])],
                         ids=["roll-forward", "no-roll-forward"])
def test_the_new_leader_rolls_forward_a_split_whose_leader_died_before_the_cas(
        deploy: Deploy, mutants: Mutants) -> None:
    deployment, leader, successor = _two_brokers(deploy, "sub-a", successor=mutants)
    # The leader's broker dies as it terminates the parent; the termination goes through.
    _fault_at_first(deployment, "terminate", deployment.stores[BROKER_A].close)

    with pytest.raises(MetadataError):
        leader.split_segment(0)
    # The parent is terminated and the layout still shows it ACTIVE: nobody can write to
    # those hashes until the split is finished.
    assert deployment.resources.read_layout().layout.epoch == 0

    eventually(lambda: successor.is_leader, what="B takes over")
    if mutants.enabled:
        # B forgot the split: segment 0 stays terminated and ACTIVE, so every send keyed
        # into its range is refused and no layout ever names a segment to send it to.
        layout = deployment.resources.read_layout().layout
        assert layout.epoch == 0 and layout.segment(0).is_active
        assert deployment.segments.state(deployment.segment_topic(0))["terminated"]
        assert deployment.resources.read_pending_change() is None
        return
    _assert_split_completed(deployment, {"sub-a"})
    assert successor.get_layout() == deployment.resources.read_layout().layout


def test_a_split_interrupted_by_session_expiry_is_finished_by_whoever_leads_next(
        deploy: Deploy) -> None:
    deployment, leader, other = _two_brokers(deploy, "sub-a", "sub-b")
    _fault_at_first(deployment, "terminate",
                    lambda: expire_session_of(deployment.stores[BROKER_A]))

    try:
        leader.split_segment(0)
    except (MetadataError, ScalableTopicError):
        pass  # the old leader may or may not have got its CAS in before it noticed

    eventually(lambda: leader.is_leader or other.is_leader, what="someone leads")
    eventually(lambda: deployment.resources.read_pending_change() is None,
               what="the split is finished")
    _assert_split_completed(deployment, {"sub-a", "sub-b"})


def test_the_step_pause_holds_a_split_between_terminating_and_writing_the_layout(
        deploy: Deploy) -> None:
    """The fault control that lets a run's nemesis hit the roll-forward window: while the
    leader pauses, the parent is terminated and the layout still names it ACTIVE."""
    deployment = deploy(2)
    leader = deployment.controller(BROKER_A, step_pause=1.0)
    leader.create_subscription("sub-a")
    split = threading.Thread(target=leader.split_segment, args=(0,))
    split.start()
    eventually(lambda: deployment.segments.state(deployment.segment_topic(0))["terminated"],
               what="the parent terminated")
    assert deployment.resources.read_layout().layout.epoch == 0
    assert deployment.resources.read_pending_change() is not None
    split.join(timeout=10)
    _assert_split_completed(deployment, {"sub-a"})


@pytest.mark.parametrize("mutants", [NONE, Mutants.of(["layout-without-cas"])],
                         ids=["cas", "layout-without-cas"])
def test_a_leader_deposed_inside_the_step_pause_never_overwrites_its_successor(
        deploy: Deploy, mutants: Mutants) -> None:
    """The pause comes after the leader's last check that it leads, as a process stalled
    between its check and its write would: only the compare-and-set stops a deposed
    leader's layout from replacing a newer one."""
    deployment = deploy(2)
    leader = deployment.controller(BROKER_A, step_pause=3.0, mutants=mutants)
    successor = deployment.controller(BROKER_B)
    leader.create_subscription("sub-a")
    split = threading.Thread(target=_ignore_errors(lambda: leader.split_segment(0)))
    split.start()
    eventually(lambda: deployment.segments.state(deployment.segment_topic(0))["terminated"],
               what="the parent terminated, the leader in its pause")
    expire_session_of(deployment.stores[BROKER_A])
    eventually(lambda: successor.is_leader, what="B takes over")
    successor.split_segment(1)  # after rolling A's split forward: epoch 2
    assert deployment.resources.read_layout().layout.epoch == 2
    split.join(timeout=10)

    layout = deployment.resources.read_layout().layout
    if mutants.enabled:
        # A's epoch-1 layout replaced B's: segment 1 is ACTIVE again, its children gone.
        assert layout.epoch == 1 and layout.segment(1).is_active
        return
    assert layout.epoch == 2 and not layout.segment(1).is_active


def _ignore_errors(action: Callable[[], object]) -> Callable[[], None]:
    def run() -> None:
        try:
            action()
        except (MetadataError, ScalableTopicError):
            pass  # a deposed leader's request fails; what it stored is the question
    return run


@pytest.mark.parametrize("mutants", [NONE, Mutants.of(["no-grace-period"])],
                         ids=["grace-period", "no-grace-period"])
def test_consumer_sessions_survive_a_failover_within_the_grace_period(
        deploy: Deploy, mutants: Mutants) -> None:
    deployment = deploy(4)
    leader = deployment.controller(BROKER_A, grace_period=2.0)
    successor = deployment.controller(BROKER_B, grace_period=2.0, mutants=mutants)
    leader.register_consumer("billing", "c-1", 1, PushRecorder())
    leader.register_consumer("billing", "c-2", 2, PushRecorder())
    before = leader.assignments("billing")
    assert [a.segment_ids for a in before.values()] == [(0, 2), (1, 3)]

    leader.close()
    eventually(lambda: successor.is_leader, what="B takes over")

    if mutants.enabled:
        # Every restored consumer counts as disconnected and is evicted at once.
        assert successor.assignments("billing") == {}
        assert deployment.resources.registrations("billing") == []
        return
    assert successor.assignments("billing") == before
    assert successor.drain_status("billing").assignable == (0, 1, 2, 3)
    c1 = PushRecorder()
    assert successor.register_consumer("billing", "c-1", 11, c1) == before["c-1"]

    # c-2 never comes back: its session ends with the grace period, c-1 takes over.
    c1.wait_for(lambda pushed: bool(pushed) and pushed[-1].segment_ids == (0, 1, 2, 3),
                timeout=15)
    assert [r.consumer_name for r in deployment.resources.registrations("billing")] == ["c-1"]
    assert successor.assignments("billing")["c-1"].segment_ids == (0, 1, 2, 3)
