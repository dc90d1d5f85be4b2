"""Our extension (document 003): individually acknowledged messages follow the subscription
to the other clusters, which skip them after a failover."""

from __future__ import annotations

import asyncio

from hypothesis import given
from hypothesis import strategies as st

from impl.replication.acknowledged import (
    AcknowledgedElsewhere,
    AcknowledgedRange,
    MessageIdentity,
    acknowledged_ranges,
    filter_acknowledged,
    identity_of,
    original_position,
    stamp_original_position,
)
from impl.replication.config import ReplicatedSubscriptionsConfig
from impl.replication.markers import SubscriptionUpdate, is_marker
from impl.storage.api import Entry, Position
from tests.replication.geo_sim import LEDGER, Geo
from wire.frames import encode_entry, split_entry
from wire.pulsar_api_pb2 import MessageMetadata

identities = st.builds(MessageIdentity, st.sampled_from(["a", "b", "c"]),
                       st.builds(Position, st.integers(1, 3), st.integers(0, 40)))


def test_the_origin_stamp_survives_the_wire_and_names_the_message() -> None:
    metadata = MessageMetadata(producer_name="p", sequence_id=3, publish_time=1,
                               replicated_from="a")
    stamp_original_position(metadata, MessageIdentity("a", Position(4, 2)))
    received = MessageMetadata.FromString(metadata.SerializeToString())
    assert original_position(received) == MessageIdentity("a", Position(4, 2))
    assert identity_of("b", Position(9, 9), received) == MessageIdentity("a", Position(4, 2))
    local = MessageMetadata(producer_name="p", sequence_id=3, publish_time=1)
    assert original_position(local) is None
    assert identity_of("b", Position(9, 9), local) == MessageIdentity("b", Position(9, 9))


def _covered(ranges: tuple[AcknowledgedRange, ...]) -> set[MessageIdentity]:
    return {MessageIdentity(r.origin_cluster, Position(r.ledger_id, e))
            for r in ranges for e in range(r.first_entry_id, r.last_entry_id + 1)}


def test_consecutive_entries_of_one_origin_share_a_range() -> None:
    ids = [MessageIdentity("a", Position(1, e)) for e in (4, 5, 6, 9)] + [
        MessageIdentity("b", Position(1, 7)), MessageIdentity("a", Position(2, 10))]
    assert acknowledged_ranges(ids, limit=10) == (
        AcknowledgedRange("a", 1, 4, 6), AcknowledgedRange("a", 1, 9, 9),
        AcknowledgedRange("b", 1, 7, 7), AcknowledgedRange("a", 2, 10, 10))
    assert acknowledged_ranges(ids, limit=2) == (
        AcknowledgedRange("a", 1, 4, 6), AcknowledgedRange("a", 1, 9, 9))


@given(st.lists(identities, max_size=40), st.integers(1, 50))
def test_ranges_never_claim_a_message_that_was_not_acknowledged(
        acked: list[MessageIdentity], limit: int) -> None:
    ranges = acknowledged_ranges(acked, limit)
    assert len(ranges) <= limit
    assert _covered(ranges) <= set(acked)
    if len(acknowledged_ranges(acked, 10_000)) <= limit:
        assert _covered(ranges) == set(acked)


@given(st.lists(st.builds(lambda c, ledger, f, n: AcknowledgedRange(c, ledger, f, f + n),
                          st.sampled_from(["a", "b"]), st.integers(1, 3), st.integers(0, 30),
                          st.integers(0, 5)), max_size=12), identities)
def test_lookup_agrees_with_the_ranges(ranges: list[AcknowledgedRange],
                                       probe: MessageIdentity) -> None:
    assert (probe in AcknowledgedElsewhere(ranges)) == (probe in _covered(tuple(ranges)))


def _entry(position: Position, origin: MessageIdentity | None) -> Entry:
    metadata = MessageMetadata(producer_name="p", sequence_id=0, publish_time=1)
    if origin:
        metadata.replicated_from = origin.cluster
        stamp_original_position(metadata, origin)
    return Entry(position, encode_entry(metadata, b"x"))


def test_the_dispatcher_filter_drops_only_what_another_cluster_acknowledged() -> None:
    acknowledged = AcknowledgedElsewhere([AcknowledgedRange("a", 1, 5, 6),
                                          AcknowledgedRange("b", 7, 2, 2)])
    entries = [_entry(Position(7, 0), MessageIdentity("a", Position(1, 5))),
               _entry(Position(7, 1), MessageIdentity("a", Position(1, 7))),
               _entry(Position(7, 2), None),   # published here in b: acknowledged in a
               _entry(Position(7, 3), None)]
    result = filter_acknowledged("b", entries, acknowledged)
    assert [e.position for e in result.already_acknowledged] == [Position(7, 0), Position(7, 2)]
    assert [e.position for e in result.deliver] == [Position(7, 1), Position(7, 3)]


async def _holes(config: ReplicatedSubscriptionsConfig) -> Geo:
    """003's case: m0 stays unacknowledged (think of a delayed message), so mark-delete
    cannot move, while m1..m3 and b's b0 are acknowledged individually in a."""
    geo = Geo(["a", "b"], config=config)
    a = geo.topics["a"]
    subscription = a.add_subscription("sub")
    geo.topics["b"].add_subscription("sub")
    positions = [a.publish(b"m%d" % n) for n in range(5)]
    geo.topics["b"].publish(b"b0")
    await geo.replicate_all()
    b0_in_a = next(e.position for e in a.entries if e.data.endswith(b"b0"))
    subscription.acked = {*positions[1:4], b0_in_a}
    await geo.controllers["a"].tick()
    await geo.replicate_all()
    return geo


def _payloads(entries: list[Entry]) -> list[bytes]:
    return sorted(payload for e in entries for metadata, payload in [split_entry(e.data)]
                  if not is_marker(metadata))


def _failover(geo: Geo) -> tuple[list[bytes], list[bytes]]:
    """Delivered to, and skipped for, a consumer of `sub` that moves to b."""
    kept = filter_acknowledged("b", geo.topics["b"].entries,
                               geo.controllers["b"].acknowledged_elsewhere("sub"))
    return _payloads(kept.deliver), _payloads(kept.already_acknowledged)


def test_with_the_extension_b_skips_what_a_acknowledged_out_of_order() -> None:
    async def scenario() -> None:
        geo = await _holes(ReplicatedSubscriptionsConfig(replicate_individually_deleted=True))
        update, = [m for m in geo.topics["a"].markers() if isinstance(m, SubscriptionUpdate)]
        assert update.clusters == {}  # no snapshot used yet: acknowledgements only
        assert set(update.acknowledged) == {AcknowledgedRange("a", LEDGER, 1, 3),
                                            AcknowledgedRange("b", LEDGER, 0, 0)}
        assert _failover(geo) == ([b"m0", b"m4"], [b"b0", b"m1", b"m2", b"m3"])
        updates = len(geo.topics["a"].markers())
        await geo.controllers["a"].tick()
        assert len(geo.topics["a"].markers()) == updates  # unchanged: not sent again

    asyncio.run(scenario())


def test_without_the_extension_b_delivers_them_again() -> None:
    async def scenario() -> None:
        geo = await _holes(ReplicatedSubscriptionsConfig())
        assert not any(isinstance(m, SubscriptionUpdate) for m in geo.topics["a"].markers())
        assert _failover(geo) == ([b"b0", b"m0", b"m1", b"m2", b"m3", b"m4"], [])

    asyncio.run(scenario())
