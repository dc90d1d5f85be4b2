"""Managed ledgers against real bookies and ZooKeeper: writes survive reopening, a new
owner fences the old one (and, with `no-fencing`, does not), termination is persistent."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from impl.storage.api import InitialPosition, OwnershipLost, Position, TopicTerminated
from impl.storage.factory import ManagedLedgerFactory
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
