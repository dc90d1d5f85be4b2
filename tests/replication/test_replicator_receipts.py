"""The replicator acknowledges a batch on its cursor only once the remote cluster's
receipts came back: a remote that goes away first leaves the batch unacknowledged, to be
sent again after the rewind. The mutant `replicator-acks-before-receipt` acknowledges it
as soon as it is sent, so nothing sends it again."""

from __future__ import annotations

import asyncio

import pytest

from impl.mutants import NONE, Mutants
from impl.replication.config import GeoReplicationConfig
from impl.replication.remote_producer import RemoteUnavailable
from impl.replication.replicator import Replicator, ReplicatorLinks
from impl.storage.api import Entry, Position
from tests.replication.geo_sim import data_entry

BATCH = [Entry(Position(3, n), data_entry(f"m{n}".encode())) for n in range(3)]


class _Cursor:
    """Hands out one batch; records what is acknowledged."""

    def __init__(self) -> None:
        self.acknowledged: list[Position] = []

    def has_more(self) -> bool:
        return True

    async def read_entries(self, max_entries: int) -> list[Entry]:
        return BATCH[:max_entries]

    async def delete(self, positions: list[Position]) -> None:
        self.acknowledged.extend(positions)


class _DyingRemote:
    """Takes every send, then goes away before any receipt comes."""

    connected = True

    def __init__(self) -> None:
        self.sent = 0

    def send(self, entry: bytes) -> asyncio.Future[Position]:
        self.sent += 1
        receipt: asyncio.Future[Position] = asyncio.get_running_loop().create_future()
        receipt.set_exception(RemoteUnavailable("the remote broker died"))
        return receipt


def _acknowledged_when_the_remote_dies(mutants: Mutants = NONE) -> list[Position]:
    async def main() -> list[Position]:
        async def nowhere() -> str:
            return ""

        async def no_marker(*_: object) -> None:
            pass

        cursor, remote = _Cursor(), _DyingRemote()
        links = ReplicatorLinks(remote_url=nowhere, remote_marker=no_marker,
                                data_seen=lambda _p: None, message_ttl_s=lambda: None)
        replicator = Replicator("persistent://t/ns/x", cursor, "a", "b",  # type: ignore[arg-type]
                                links, GeoReplicationConfig(), mutants)
        replicator._producer = remote  # type: ignore[assignment]
        with pytest.raises(RemoteUnavailable):
            await replicator._replicate_batch()
        assert remote.sent == len(BATCH)
        return cursor.acknowledged
    return asyncio.run(main())


def test_a_batch_without_receipts_stays_unacknowledged() -> None:
    assert _acknowledged_when_the_remote_dies() == []


def test_mutant_replicator_acks_before_receipt_acknowledges_what_the_remote_never_stored(
        ) -> None:
    acknowledged = _acknowledged_when_the_remote_dies(
        Mutants.of(["replicator-acks-before-receipt"]))
    assert acknowledged == [entry.position for entry in BATCH]
