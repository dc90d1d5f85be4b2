"""The whole marker flow among two and three clusters, and what each PIP-33 mutant costs a
consumer that fails over: messages it never acknowledged and never receives again."""

from __future__ import annotations

import asyncio

from impl.mutants import NONE, Mutants
from impl.replication.markers import Snapshot, SnapshotRequest, SnapshotResponse
from impl.storage.api import InitialPosition, Position
from tests.replication.geo_sim import LEDGER, Geo, published


def lost(geo: Geo, consumed: list[bytes], delivered: list[bytes]) -> set[bytes]:
    return published(geo) - set(consumed) - set(delivered)


def test_two_clusters_snapshot_in_one_round_and_the_update_creates_the_subscription() -> None:
    async def scenario() -> None:
        geo = Geo(["a", "b"])
        a, b = geo.topics["a"], geo.topics["b"]
        a.add_subscription("sub")
        for n in range(3):
            a.publish(b"m%d" % n)
        await geo.controllers["a"].tick()
        await geo.replicate_all()

        assert [type(m) for m in a.markers()] == [SnapshotRequest, SnapshotResponse, Snapshot]
        snapshot = a.markers()[-1]
        assert isinstance(snapshot, Snapshot)
        assert snapshot.clusters == {"b": Position(LEDGER, 3)}  # b's last: the request
        assert snapshot.local_position == Position(LEDGER, 4)  # where b's response landed
        assert Snapshot not in [type(m) for m in b.markers()]  # a snapshot stays home

        consumed = await geo.consume("a", "sub")
        await geo.replicate_all()
        assert b.created == {"sub": Position(LEDGER, 3)}
        assert consumed == [b"m0", b"m1", b"m2"]
        assert geo.failover("b", "sub") == []

    asyncio.run(scenario())


def test_an_idle_topic_takes_no_more_snapshots() -> None:
    async def scenario() -> None:
        geo = Geo(["a", "b"])
        geo.topics["a"].publish(b"m")
        assert await geo.controllers["a"].tick() is not None
        await geo.replicate_all()
        assert await geo.controllers["a"].tick() is None  # markers alone do not count
        geo.topics["a"].publish(b"n")
        assert await geo.controllers["a"].tick() is not None

    asyncio.run(scenario())


async def _three_clusters_with_a_late_message(mutants: Mutants) -> tuple[Geo, set[bytes]]:
    """PIP-33's reason for a second round: b's answer covers a message from c that has not
    reached a when the first round completes."""
    geo = Geo(["a", "b", "c"], mutants=mutants)
    geo.topics["a"].add_subscription("sub")
    geo.topics["b"].add_subscription("sub")
    geo.topics["a"].publish(b"a0")
    await geo.replicate_all()
    await geo.controllers["a"].tick()
    await geo.replicate("a", "c")           # c answers first
    geo.topics["c"].publish(b"c-late")     # then c publishes
    await geo.replicate("c", "b")           # c-late reaches b ...
    await geo.replicate("a", "b")           # ... before the request: b's answer covers it
    await geo.replicate("b", "a")
    await geo.replicate("c", "a", count=1)  # c's answer, but not yet c-late
    consumed = await geo.consume("a", "sub")
    await geo.replicate("a", "b")
    return geo, lost(geo, consumed, geo.failover("b", "sub"))


def test_three_clusters_need_a_second_round_before_anyone_moves() -> None:
    geo, missing = asyncio.run(_three_clusters_with_a_late_message(NONE))
    assert missing == set()
    builder, = geo.controllers["a"].pending_snapshots.values()
    assert builder.round == 2


def test_mutant_single_round_loses_the_late_message_after_failover() -> None:
    _, missing = asyncio.run(_three_clusters_with_a_late_message(Mutants.of(["single-round"])))
    assert missing == {b"c-late"}


def test_three_clusters_complete_after_the_second_round_behind_the_late_message() -> None:
    async def scenario() -> None:
        geo, _ = await _three_clusters_with_a_late_message(NONE)
        await geo.replicate_all()
        a = geo.topics["a"]
        snapshot = a.markers()[-1]
        assert isinstance(snapshot, Snapshot)
        late_in_a = next(e.position for e in a.entries if e.data.endswith(b"c-late"))
        assert snapshot.local_position > late_in_a
        assert geo.controllers["a"].completed_snapshots == 1

    asyncio.run(scenario())


async def _a_response_missing(mutants: Mutants) -> set[bytes]:
    """PIP-33's example against partial snapshots: b's message reached c but not a, and b
    has not answered."""
    geo = Geo(["a", "b", "c"], mutants=mutants)
    geo.topics["a"].add_subscription("sub")
    geo.topics["c"].add_subscription("sub")
    geo.topics["a"].publish(b"a0")
    await geo.replicate_all()
    await geo.controllers["a"].tick()
    geo.topics["b"].publish(b"b1")
    await geo.replicate("b", "c")
    await geo.replicate("a", "c")
    await geo.replicate("c", "a")
    consumed = await geo.consume("a", "sub")
    await geo.replicate("a", "c")
    return lost(geo, consumed, geo.failover("c", "sub"))


def test_a_snapshot_waits_for_every_cluster() -> None:
    assert asyncio.run(_a_response_missing(NONE)) == set()


def test_mutant_partial_snapshot_loses_a_message_after_failover() -> None:
    assert asyncio.run(_a_response_missing(Mutants.of(["partial-snapshot"]))) == {b"b1"}


async def _ack_between_two_snapshots(mutants: Mutants) -> set[bytes]:
    geo = Geo(["a", "b"], mutants=mutants)
    geo.topics["a"].add_subscription("sub")
    geo.topics["b"].add_subscription("sub")
    for batch in ((b"m0", b"m1"), (b"m2", b"m3")):
        for payload in batch:
            geo.topics["a"].publish(payload)
        await geo.controllers["a"].tick()
        await geo.replicate_all()
    m2 = next(e.position for e in geo.topics["a"].entries if e.data.endswith(b"m2"))
    consumed = await geo.consume("a", "sub", ack_through=m2)
    await geo.replicate_all()
    return lost(geo, consumed, geo.failover("b", "sub"))


def test_an_update_uses_the_snapshot_at_or_before_mark_delete() -> None:
    assert asyncio.run(_ack_between_two_snapshots(NONE)) == set()


def test_mutant_update_past_mark_delete_loses_an_unacknowledged_message() -> None:
    missing = asyncio.run(_ack_between_two_snapshots(Mutants.of(["update-past-mark-delete"])))
    assert missing == {b"m3"}


async def _subscription_created_by_update(mutants: Mutants) -> tuple[Geo, set[bytes]]:
    geo = Geo(["a", "b"], mutants=mutants)
    geo.topics["a"].add_subscription("sub")
    geo.topics["a"].publish(b"m0")
    await geo.controllers["a"].tick()
    await geo.replicate_all()
    geo.topics["b"].publish(b"b1")  # after b answered, before the update arrives
    consumed = await geo.consume("a", "sub")
    await geo.replicate("a", "b")
    return geo, lost(geo, consumed, geo.failover("b", "sub"))


def test_an_update_creates_a_missing_subscription_where_the_snapshot_says() -> None:
    geo, missing = asyncio.run(_subscription_created_by_update(NONE))
    assert missing == set()
    assert geo.topics["b"].created == {"sub": Position(LEDGER, 1)}


def test_mutant_update_creates_at_latest_loses_what_came_in_between() -> None:
    geo, missing = asyncio.run(
        _subscription_created_by_update(Mutants.of(["update-creates-at-latest"])))
    assert missing == {b"b1"}
    assert geo.topics["b"].created == {"sub": InitialPosition.LATEST}
