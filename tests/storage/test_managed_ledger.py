"""Managed ledgers against real bookies and ZooKeeper: writes survive reopening, a new
owner fences the old one (and, with `no-fencing`, does not), termination is persistent,
failures of a bookie cost a ledger, not an acknowledged entry."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from impl.metadata.store import MetadataStore
from impl.storage.api import InitialPosition, ManagedLedger, OwnershipLost, TopicTerminated
from impl.storage.bookie_client import BookieClient
from impl.storage.errors import BookieUnavailable, NoSuchLedger
from impl.storage.factory import ManagedLedgerFactory
from impl.storage.ledger_info import managed_ledger_path
from tests.storage.conftest import Bookie
from tests.storage.running import owner, run

pytestmark = [pytest.mark.zk, pytest.mark.cluster]

Factories = Callable[..., ManagedLedgerFactory]
StartBookie = Callable[..., Bookie]
NAME = "public/default/persistent/orders"


async def _everything(ledger: ManagedLedger) -> list[bytes]:
    cursor = await ledger.open_cursor("reader", InitialPosition.EARLIEST)
    return [entry.data for entry in await cursor.read_entries(1000)]


def test_entries_added_are_read_back_after_reopening_in_order(
        start_bookie: StartBookie, make_factory: Factories) -> None:
    start_bookie()

    async def scenario() -> None:
        async with owner(make_factory, NAME) as ledger:
            written = [await ledger.add_entry(f"m{i}".encode()) for i in range(5)]
        async with owner(make_factory, NAME) as reopened:
            more = await reopened.add_entry(b"m5")
            assert more.ledger_id > written[-1].ledger_id  # a new owner writes a new ledger
            assert reopened.last_confirmed == more
            cursor = await reopened.open_cursor("sub", InitialPosition.EARLIEST)
            entries = await cursor.read_entries(100)
            assert [e.data for e in entries] == [f"m{i}".encode() for i in range(6)]
            assert [e.position for e in entries] == [*written, more]

    run(scenario())


@pytest.mark.parametrize("mutants", ["", "no-fencing"])
def test_a_new_owner_fences_the_old_one_unless_fencing_is_skipped(
        start_bookie: StartBookie, make_factory: Factories, mutants: str) -> None:
    start_bookie()

    async def scenario() -> None:
        async with owner(make_factory, NAME) as old:
            acknowledged = await old.add_entry(b"before takeover")
            async with owner(make_factory, NAME, mutants=mutants) as new:
                if mutants:
                    forked = await old.add_entry(b"after takeover")  # acknowledged: the harm
                    assert forked.ledger_id == acknowledged.ledger_id
                else:
                    with pytest.raises(OwnershipLost):
                        await old.add_entry(b"after takeover")
                    with pytest.raises(OwnershipLost):
                        await old.add_entry(b"and never again")
                accepted = await new.add_entry(b"new owner")
                assert new.last_confirmed == accepted
                # Either way the new owner never sees the old owner's late write.
                assert await _everything(new) == [b"before takeover", b"new owner"]

    run(scenario())


def test_termination_is_persistent(start_bookie: StartBookie, make_factory: Factories) -> None:
    start_bookie()

    async def scenario() -> None:
        async with owner(make_factory, NAME) as ledger:
            last = await ledger.add_entry(b"last words")
            assert await ledger.terminate() == last
            with pytest.raises(TopicTerminated):
                await ledger.add_entry(b"too late")
        async with owner(make_factory, NAME) as reopened:
            assert reopened.terminated and reopened.last_confirmed == last
            with pytest.raises(TopicTerminated):
                await reopened.add_entry(b"still too late")
            cursor = await reopened.open_cursor("sub", InitialPosition.EARLIEST)
            assert [e.data for e in await cursor.read_entries(10)] == [b"last words"]
            # Nothing more will come: the wait lasts until the ledger closes, so a caller
            # that loops on it does not spin.
            waiting = asyncio.create_task(cursor.wait_for_more())
            await asyncio.sleep(0.05)
            assert not waiting.done()
        await asyncio.wait_for(waiting, 5)

    run(scenario())


def test_concurrent_adds_keep_call_order_across_rollovers(
        start_bookie: StartBookie, make_factory: Factories) -> None:
    start_bookie()

    async def scenario() -> None:
        async with owner(make_factory, NAME, max_entries_per_ledger=4) as ledger:
            positions = await asyncio.gather(*(ledger.add_entry(b"m%d" % i) for i in range(30)))
            assert list(positions) == sorted(set(positions))
            assert len({p.ledger_id for p in positions}) > 1
            assert await _everything(ledger) == [b"m%d" % i for i in range(30)]

    run(scenario())


def test_a_restarted_bookie_gets_a_new_ledger_and_nothing_acknowledged_is_lost(
        start_bookie: StartBookie, make_factory: Factories) -> None:
    bookie = start_bookie()

    async def scenario() -> None:
        async with owner(make_factory, NAME, bookie_request_timeout=5) as ledger:
            before = await ledger.add_entry(b"before the crash")
            bookie.kill()
            with pytest.raises(BookieUnavailable):
                await ledger.add_entry(b"while it is down")
            await asyncio.get_running_loop().run_in_executor(None, bookie.restart)
            after = await ledger.add_entry(b"after the restart")
            assert after.ledger_id > before.ledger_id  # the broken ledger was replaced
            assert await _everything(ledger) == [b"before the crash", b"after the restart"]

    run(scenario())


def test_a_stale_owner_cannot_move_a_cursor(start_bookie: StartBookie,
                                            make_factory: Factories) -> None:
    start_bookie()

    async def scenario() -> None:
        async with owner(make_factory, NAME) as old:
            cursor = await old.open_cursor("sub", InitialPosition.EARLIEST)
            first = await old.add_entry(b"m0")
            second = await old.add_entry(b"m1")
            async with owner(make_factory, NAME) as new:
                with pytest.raises(OwnershipLost):
                    await cursor.mark_delete(second)
                new_cursor = new.cursors()["sub"]
                await new_cursor.mark_delete(first)
                assert new_cursor.backlog() == 1

    run(scenario())


def test_deleting_removes_ledgers_and_metadata(start_bookie: StartBookie,
                                               make_factory: Factories,
                                               zk_store: Callable[..., MetadataStore]) -> None:
    bookie = start_bookie()

    async def scenario() -> None:
        async with owner(make_factory, NAME) as ledger:
            await ledger.open_cursor("sub", InitialPosition.EARLIEST)
            position = await ledger.add_entry(b"doomed")
            await ledger.delete()
        assert not zk_store().exists(managed_ledger_path(NAME))
        client = BookieClient(bookie.address)
        with pytest.raises(NoSuchLedger):
            await client.read(position.ledger_id, 0, 0)
        await client.close()

    run(scenario())
