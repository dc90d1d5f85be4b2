"""Leader election at PIP-468's controller path, with failover on session expiry."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from harness.targets.local.zookeeper import ZooKeeperEnsemble
from impl.metadata import paths
from impl.metadata.election import (
    LeaderElection,
    LeaderElectionState,
    LeaderWatcher,
    current_leader,
)
from impl.metadata.store import MetadataStore
from nemesis.session_expiry import expire_session_of
from tests.fixtures.recording import Recorder, eventually

pytestmark = pytest.mark.zk

Connect = Callable[..., MetadataStore]
CONTROLLER = paths.scalable_topic_controller("acme", "orders", "payments")
BROKER_A = "pulsar://127.0.0.1:6650"
BROKER_B = "pulsar://127.0.0.1:6651"


def test_leader_moves_to_the_other_candidate_when_the_leaders_session_expires(
    zk_store: Connect,
) -> None:
    store_a, store_b, reader = zk_store(), zk_store(), zk_store()
    a_events: Recorder[str] = Recorder()
    b_events: Recorder[str] = Recorder()
    leaders: Recorder[str | None] = Recorder()

    a = LeaderElection(
        store_a, CONTROLLER, BROKER_A,
        on_elected=lambda: a_events("elected"), on_lost=lambda: a_events("lost"),
    )
    b = LeaderElection(
        store_b, CONTROLLER, BROKER_B,
        on_elected=lambda: b_events("elected"), on_lost=lambda: b_events("lost"),
    )
    a.start()
    b.start()
    assert a.is_leader and not b.is_leader
    assert b.state == LeaderElectionState.FOLLOWING and b.leader == BROKER_A
    LeaderWatcher(reader, CONTROLLER, leaders)
    leaders.wait_for(lambda v: v == [BROKER_A])

    expire_session_of(store_a)

    leaders.wait_for(lambda v: v == [BROKER_A, None, BROKER_B])
    b_events.wait_for(lambda v: v == ["elected"])
    a_events.wait_for(lambda v: v == ["elected", "lost"])
    assert b.is_leader
    assert current_leader(reader, CONTROLLER) == BROKER_B
    # A campaigns again under its new session, and follows.
    eventually(lambda: a.state == LeaderElectionState.FOLLOWING, what="A follows B")
    assert a.leader == BROKER_B and not a.is_leader
    a.stop()
    b.stop()


def test_stopping_the_leader_hands_over_at_once(zk_store: Connect) -> None:
    store_a, store_b = zk_store(), zk_store()
    with LeaderElection(store_a, CONTROLLER, BROKER_A) as a:
        with LeaderElection(store_b, CONTROLLER, BROKER_B) as b:
            a.stop()
            eventually(lambda: b.is_leader, timeout=5.0, what="B leads")
            assert current_leader(store_a, CONTROLLER) == BROKER_B
        assert current_leader(store_a, CONTROLLER) is None


def test_a_leader_stops_leading_while_disconnected_and_resumes_in_the_same_session(
    zk_ensemble3: ZooKeeperEnsemble,
) -> None:
    with MetadataStore.connect(zk_ensemble3.connect_string, session_timeout=20.0) as store:
        session = store.session_id
        assert session is not None
        events: Recorder[str] = Recorder()
        election = LeaderElection(
            store, CONTROLLER, BROKER_A,
            on_elected=lambda: events("elected"), on_lost=lambda: events("lost"),
        )
        election.start()
        first_term = store.get_node(CONTROLLER)
        serving = zk_ensemble3.serving_member(session)
        assert serving is not None

        zk_ensemble3.nodes[serving].stop()  # the client moves to another member

        events.wait_for(lambda v: v == ["elected", "lost", "elected"])
        assert election.is_leader
        # Reclaimed, not re-created: the node of the first term survived the outage.
        assert store.get_node(CONTROLLER) == first_term
        assert first_term.ephemeral_owner == session
        election.stop()
