"""Managed ledgers against real bookies and ZooKeeper: writes survive reopening, a new
owner fences the old one (and, with `no-fencing`, does not), termination is persistent."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from impl.metadata.store import MetadataStore
from impl.storage.api import InitialPosition, OwnershipLost, TopicTerminated
from impl.storage.bookie_client import BookieClient
from impl.storage.errors import BookieUnavailable, NoSuchLedger
from impl.storage.factory import ManagedLedgerFactory
from impl.storage.ledger_info import managed_ledger_path
from tests.storage.conftest import Bookie
from tests.storage.running import run

pytestmark = [pytest.mark.zk, pytest.mark.cluster]

Factories = Callable[..., ManagedLedgerFactory]
NAME = "public/default/persistent/orders"


def test_entries_added_are_read_back_after_reopening_in_order(
        start_bookie: Callable[..., Bookie], make_factory: Factories) -> None:
    start_bookie()

    async def scenario() -> None:
        first = make_factory()
        ledger = await first.open(NAME)
        written = [await ledger.add_entry(f"m{i}".encode()) for i in range(5)]
        await ledger.close()
        await first.close()

        second = make_factory()
        reopened = await second.open(NAME)
        more = await reopened.add_entry(b"m5")
        cursor = await reopened.open_cursor("sub", InitialPosition.EARLIEST)
        entries = await cursor.read_entries(100)
        assert [e.data for e in entries] == [f"m{i}".encode() for i in range(6)]
        assert [e.position for e in entries] == [*written, more]
        assert more.ledger_id > written[-1].ledger_id  # a new owner writes a new ledger
        assert reopened.last_confirmed == more
        await reopened.close()
        await second.close()

    run(scenario())


def test_a_new_owner_fences_the_old_one(start_bookie: Callable[..., Bookie],
                                        make_factory: Factories) -> None:
    start_bookie()

    async def scenario() -> None:
        old_factory, new_factory = make_factory(), make_factory()
        old = await old_factory.open(NAME)
        acknowledged = await old.add_entry(b"before takeover")
        new = await new_factory.open(NAME)
        with pytest.raises(OwnershipLost):
            await old.add_entry(b"after takeover")
        with pytest.raises(OwnershipLost):
            await old.add_entry(b"and never again")
        cursor = await new.open_cursor("sub", InitialPosition.EARLIEST)
        assert [e.data for e in await cursor.read_entries(10)] == [b"before takeover"]
        assert new.last_confirmed == acknowledged
        await new.close()
        for factory in (old_factory, new_factory):
            await factory.close()

    run(scenario())


def test_without_fencing_the_old_owner_forks_the_topic(start_bookie: Callable[..., Bookie],
                                                       make_factory: Factories) -> None:
    start_bookie()

    async def scenario() -> None:
        old_factory, new_factory = make_factory(), make_factory(mutants="no-fencing")
        old = await old_factory.open(NAME)
        await old.add_entry(b"before takeover")
        new = await new_factory.open(NAME)
        forked = await old.add_entry(b"after takeover")  # acknowledged: the harm
        accepted = await new.add_entry(b"new owner")
        assert forked.ledger_id != accepted.ledger_id
        cursor = await new.open_cursor("sub", InitialPosition.EARLIEST)
        seen = [e.data for e in await cursor.read_entries(10)]
        assert seen == [b"before takeover", b"new owner"]  # the forked write is lost
        await new.close()
        for factory in (old_factory, new_factory):
            await factory.close()

    run(scenario())


def test_termination_is_persistent(start_bookie: Callable[..., Bookie],
                                   make_factory: Factories) -> None:
    start_bookie()

    async def scenario() -> None:
        factory = make_factory()
        ledger = await factory.open(NAME)
        last = await ledger.add_entry(b"last words")
        assert await ledger.terminate() == last
        with pytest.raises(TopicTerminated):
            await ledger.add_entry(b"too late")
        await ledger.close()

        second = make_factory()
        reopened = await second.open(NAME)
        assert reopened.terminated and reopened.last_confirmed == last
        with pytest.raises(TopicTerminated):
            await reopened.add_entry(b"still too late")
        cursor = await reopened.open_cursor("sub", InitialPosition.EARLIEST)
        assert [e.data for e in await cursor.read_entries(10)] == [b"last words"]
        await cursor.wait_for_more()  # returns at once: nothing more will come
        await factory.close()
        await second.close()

    run(scenario())


def test_concurrent_adds_keep_call_order_across_rollovers(
        start_bookie: Callable[..., Bookie], make_factory: Factories) -> None:
    start_bookie()

    async def scenario() -> None:
        factory = make_factory(max_entries_per_ledger=4)
        ledger = await factory.open(NAME)
        positions = await asyncio.gather(*(ledger.add_entry(b"m%d" % i) for i in range(30)))
        assert list(positions) == sorted(positions)
        assert len(set(positions)) == 30
        cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        assert [e.data for e in await cursor.read_entries(100)] == [b"m%d" % i
                                                                    for i in range(30)]
        await ledger.close()
        await factory.close()

    run(scenario())


def test_a_restarted_bookie_gets_a_new_ledger_and_nothing_acknowledged_is_lost(
        start_bookie: Callable[..., Bookie], make_factory: Factories) -> None:
    bookie = start_bookie()

    async def scenario() -> None:
        factory = make_factory(bookie_request_timeout=5)
        ledger = await factory.open(NAME)
        before = await ledger.add_entry(b"before the crash")
        bookie.kill()
        with pytest.raises(BookieUnavailable):
            await ledger.add_entry(b"while it is down")
        await asyncio.get_running_loop().run_in_executor(None, bookie.restart)
        after = await ledger.add_entry(b"after the restart")
        assert after.ledger_id > before.ledger_id  # the broken ledger was replaced
        cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        assert [e.data for e in await cursor.read_entries(10)] == [b"before the crash",
                                                                   b"after the restart"]
        await ledger.close()
        await factory.close()

    run(scenario())


def test_a_stale_owner_cannot_move_a_cursor(start_bookie: Callable[..., Bookie],
                                            make_factory: Factories) -> None:
    start_bookie()

    async def scenario() -> None:
        old_factory, new_factory = make_factory(), make_factory()
        old = await old_factory.open(NAME)
        cursor = await old.open_cursor("sub", InitialPosition.EARLIEST)
        first = await old.add_entry(b"m0")
        second = await old.add_entry(b"m1")
        new = await new_factory.open(NAME)
        with pytest.raises(OwnershipLost):
            await cursor.mark_delete(second)
        new_cursor = new.cursors()["sub"]
        await new_cursor.mark_delete(first)
        assert new_cursor.backlog() == 1
        await new.close()
        for factory in (old_factory, new_factory):
            await factory.close()

    run(scenario())


def test_deleting_removes_ledgers_and_metadata(start_bookie: Callable[..., Bookie],
                                               make_factory: Factories,
                                               zk_store: Callable[..., MetadataStore]) -> None:
    bookie = start_bookie()

    async def scenario() -> None:
        factory = make_factory()
        ledger = await factory.open(NAME)
        await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        position = await ledger.add_entry(b"doomed")
        await ledger.delete()
        assert not zk_store().exists(managed_ledger_path(NAME))
        client = BookieClient(bookie.address)
        with pytest.raises(NoSuchLedger):
            await client.read(position.ledger_id, 0, 0)
        await client.close()
        await factory.close()

    run(scenario())
