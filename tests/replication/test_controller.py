"""The controller on its own: the snapshot timer on a fake clock, timeouts, answers to other
clusters, and updates applied to local subscriptions."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from impl.mutants import NONE, Mutants
from impl.replication.config import ReplicatedSubscriptionsConfig
from impl.replication.controller import ReplicatedSubscriptionsController
from impl.replication.markers import (
    Marker,
    Snapshot,
    SnapshotRequest,
    SnapshotResponse,
    SubscriptionUpdate,
    encode_marker,
)
from impl.storage.api import Position
from tests.replication.geo_sim import LEDGER, FakeClock, SimTopic
from wire.frames import encode_entry, split_entry


def controller(remotes: tuple[str, ...] = ("b",), mutants: Mutants = NONE,
               config: ReplicatedSubscriptionsConfig = ReplicatedSubscriptionsConfig()
               ) -> tuple[ReplicatedSubscriptionsController, SimTopic, FakeClock]:
    topic, clock = SimTopic("a", remotes), FakeClock()
    ids = iter(f"snap-{n}" for n in range(1000))
    return (ReplicatedSubscriptionsController(topic, "a", config, clock=clock, mutants=mutants,
                                              new_snapshot_id=lambda: next(ids)),
            topic, clock)


async def arrive(c: ReplicatedSubscriptionsController, topic: SimTopic, marker: Marker,
                 source: str = "b") -> Position:
    """`marker` replicated in from `source`, handed to the controller as the broker would."""
    metadata, payload = split_entry(encode_marker(marker, 0))
    metadata.replicated_from = source
    entry = encode_entry(metadata, payload)
    position = topic.append(entry)
    await c.receive_marker(position, entry)
    return position


def requests(topic: SimTopic) -> list[str]:
    return [m.snapshot_id for m in topic.markers() if isinstance(m, SnapshotRequest)]


def run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(scenario())


def test_the_timer_starts_a_snapshot_every_period_while_there_is_news() -> None:
    async def scenario() -> None:
        c, topic, clock = controller(config=ReplicatedSubscriptionsConfig(
            snapshot_frequency_ms=250, snapshot_timeout_s=1.0))
        topic.publish(b"m0")
        task = asyncio.create_task(c.run())
        await clock.advance(0)
        assert requests(topic) == ["snap-0"]           # at once
        await clock.advance(0.75)
        assert requests(topic) == ["snap-0"]           # the first is pending: none other
        await clock.advance(0.25)
        assert requests(topic) == ["snap-0", "snap-1"]  # the first timed out: ask again
        await arrive(c, topic, SnapshotResponse("snap-1", "b", Position(9, 1), "a"))
        await clock.advance(1.0)
        assert requests(topic) == ["snap-0", "snap-1"]  # complete, nothing new published
        for expected in ("snap-2", "snap-3"):         # once one completed, several pend
            topic.publish(b"m")
            await clock.advance(0.25)
            assert requests(topic)[-1] == expected
        assert sorted(c.pending_snapshots) == ["snap-2", "snap-3"]
        assert set(clock.sleeps) == {0.25}
        task.cancel()

    run(scenario)


def test_no_snapshot_while_a_replicator_is_disconnected() -> None:
    async def scenario() -> None:
        c, topic, _ = controller(("b", "c"))
        topic.publish(b"m0")
        topic.connected["c"] = False
        assert await c.tick() is None
        assert requests(topic) == []
        topic.connected["c"] = True
        assert await c.tick() == "snap-0"

    run(scenario)


def test_mutant_snapshot_while_disconnected_completes_among_the_clusters_in_reach() -> None:
    async def scenario() -> None:
        c, topic, _ = controller(("b", "c"), Mutants.of(["snapshot-while-disconnected"]))
        topic.publish(b"m0")
        topic.connected["c"] = False
        assert await c.tick() == "snap-0"
        await arrive(c, topic, SnapshotResponse("snap-0", "b", Position(9, 1), "a"))
        snapshots = [m for m in topic.markers() if isinstance(m, Snapshot)]
        assert [s.clusters for s in snapshots] == [{"b": Position(9, 1)}]  # c left out
        topic.publish(b"m1")
        assert await c.tick() == "snap-1"
        topic.publish(b"m2")
        topic.connected["b"] = False
        assert await c.tick() is None  # nobody in reach: nobody to ask

    run(scenario)


def test_a_snapshot_times_out_and_a_late_response_completes_nothing() -> None:
    async def scenario() -> None:
        c, topic, clock = controller()
        topic.publish(b"m0")
        await c.tick()
        await clock.advance(29.9)
        assert list(c.pending_snapshots) == ["snap-0"]
        await clock.advance(0.1)
        await arrive(c, topic, SnapshotResponse("snap-0", "b", Position(9, 1), "a"))
        assert c.pending_snapshots == {}
        assert c.completed_snapshots == 0
        assert not any(isinstance(m, Snapshot) for m in topic.markers())

    run(scenario)


def test_mutant_snapshot_never_times_out_stops_snapshots_at_a_first_unanswered_one() -> None:
    async def scenario() -> None:
        c, topic, clock = controller(mutants=Mutants.of(["snapshot-never-times-out"]))
        for n in range(5):  # a remote that answers nothing, news every minute
            topic.publish(f"m{n}".encode())
            await c.tick()
            await clock.advance(60)
        assert requests(topic) == ["snap-0"]  # never aborted, so never asked again
        await arrive(c, topic, SnapshotResponse("snap-0", "b", Position(9, 1), "a"))
        assert c.completed_snapshots == 1  # five minutes late, still completed
        topic.publish(b"m5")
        assert await c.tick() == "snap-1"

    run(scenario)


def test_a_request_from_another_cluster_is_answered_to_it_alone() -> None:
    async def scenario() -> None:
        c, topic, _ = controller(("b", "c"))
        topic.publish(b"m0")
        at = await arrive(c, topic, SnapshotRequest("theirs", "b"))
        answer = topic.markers()[-1]
        assert answer == SnapshotResponse("theirs", "a", at, requester="b")

    run(scenario)


def test_our_own_markers_and_responses_for_others_are_passed_over() -> None:
    async def scenario() -> None:
        c, topic, _ = controller(("b", "c"))
        topic.publish(b"m0")
        entry = encode_marker(SnapshotRequest("ours", "a"), 0)  # written here: no origin
        await c.receive_marker(topic.append(entry), entry)
        await arrive(c, topic, SnapshotResponse("x", "c", Position(9, 1), requester="b"))
        assert len(topic.markers()) == 2

    run(scenario)


def test_an_update_only_moves_a_subscription_forward() -> None:
    async def scenario() -> None:
        c, topic, _ = controller()
        subscription = topic.add_subscription("sub")
        await arrive(c, topic, SubscriptionUpdate("sub", {"a": Position(LEDGER, 5)}))
        await arrive(c, topic, SubscriptionUpdate("sub", {"a": Position(LEDGER, 3)}))
        await arrive(c, topic, SubscriptionUpdate("sub", {"c": Position(LEDGER, 9)}))
        assert subscription.moves == [Position(LEDGER, 5)]

    run(scenario)


def test_mark_delete_past_a_snapshot_sends_its_positions_to_everyone() -> None:
    async def scenario() -> None:
        c, topic, _ = controller(("b", "c"))
        topic.add_subscription("sub")
        taken = Snapshot("s", Position(LEDGER, 4), {"b": Position(2, 8), "c": Position(3, 1)},
                         "a")
        c.snapshot_cache("sub").add_new_snapshot(taken)
        assert await c.mark_delete_advanced("sub", Position(LEDGER, 3)) is None
        assert await c.mark_delete_advanced("sub", Position(LEDGER, 4)) == taken
        assert topic.markers() == [SubscriptionUpdate("sub", taken.clusters)]

    run(scenario)
