"""Cursors against real bookies and ZooKeeper: acknowledgements persist across a new
owner (properties with them), `persisted` holds only what landed, even across a lost
reply, reads skip what is acknowledged, consumers wake when entries arrive, and reads
cross ledger boundaries."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest

from impl.metadata.errors import Unavailable
from impl.storage import cursor as cursor_module
from impl.storage.api import InitialPosition, ManagedCursor, Position
from impl.storage.factory import ManagedLedgerFactory
from impl.storage.managed_ledger import ManagedLedgerImpl
from tests.storage.conftest import Bookie
from tests.storage.running import owner, run

pytestmark = [pytest.mark.zk, pytest.mark.cluster]

Factories = Callable[..., ManagedLedgerFactory]
StartBookie = Callable[..., Bookie]
NAME = "public/default/persistent/cursors"


@asynccontextmanager
async def _cursor_over(make_factory: Factories, entries: int) -> AsyncIterator[
        tuple[ManagedLedgerImpl, ManagedCursor, list[Position]]]:
    """A subscription's cursor at Earliest, then `entries` entries written."""
    async with owner(make_factory, NAME) as ledger:
        assert isinstance(ledger, ManagedLedgerImpl)
        cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
        yield ledger, cursor, [await ledger.add_entry(b"m%d" % i) for i in range(entries)]


async def _mark_delete_unanswered(ledger: ManagedLedgerImpl, cursor: ManagedCursor,
                                  position: Position, monkeypatch: pytest.MonkeyPatch,
                                  lands: bool) -> None:
    """Mark-delete `position` while ZooKeeper's answer is lost: the write `lands` or never
    reaches it, and either way the cursor sees `Unavailable`."""
    store = ledger.context.store
    real_set = store.set

    def unanswered(path: str, data: bytes, expected_version: int) -> int:
        if lands:
            real_set(path, data, expected_version)
        raise Unavailable("set", path, "ConnectionLoss")

    monkeypatch.setattr(store, "set", unanswered)
    with pytest.raises(Unavailable):
        await cursor.mark_delete(position)
    monkeypatch.undo()


def test_acknowledgements_persist_across_a_new_owner(start_bookie: StartBookie,
                                                     make_factory: Factories) -> None:
    start_bookie()

    async def scenario() -> None:
        async with owner(make_factory, NAME) as ledger:
            cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
            p = [await ledger.add_entry(b"m%d" % i) for i in range(8)]
            await cursor.mark_delete(p[1])
            await cursor.delete([p[3], p[4], p[6]])
        expected_ranges = [(Position(p[2].ledger_id, 2), p[4]), (Position(p[5].ledger_id, 5), p[6])]
        assert cursor.individually_deleted == expected_ranges

        async with owner(make_factory, NAME) as reopened:
            cursor = reopened.cursors()["sub"]
            assert cursor.mark_delete_position == p[1]
            assert cursor.individually_deleted == expected_ranges
            assert cursor.backlog() == 3
            assert [e.data for e in await cursor.read_entries(10)] == [b"m2", b"m5", b"m7"]
            await cursor.delete([p[2]])  # closes the gap: mark-delete moves over 3 and 4
            assert cursor.mark_delete_position == p[4]
            assert cursor.individually_deleted == expected_ranges[1:]
            await reopened.delete_cursor("sub")
            assert "sub" not in reopened.cursors()

        async with owner(make_factory, NAME) as third:
            assert third.cursors() == {}

    run(scenario())


def test_an_acknowledgement_is_persisted_when_its_write_lands(
        start_bookie: StartBookie, make_factory: Factories,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The write of the first ack lands but its reply is lost: the ack holds in memory,
    not in `persisted`, and the next write (which the lost one must not fence off as a
    rival's) carries both."""
    start_bookie()

    async def scenario() -> None:
        async with _cursor_over(make_factory, 3) as (ledger, cursor, p):
            await _mark_delete_unanswered(ledger, cursor, p[0], monkeypatch, lands=True)
            assert cursor.mark_delete_position == p[0]
            assert cursor.persisted.mark_delete < p[0]

            await cursor.delete([p[2]])
            assert cursor.persisted.mark_delete == p[0]
            assert list(cursor.persisted.individually_deleted) == [(p[1], p[2])]

        async with owner(make_factory, NAME) as reopened:
            cursor = reopened.cursors()["sub"]
            assert cursor.mark_delete_position == p[0]
            assert cursor.individually_deleted == [(p[1], p[2])]

    run(scenario())


def test_flush_stores_an_acknowledgement_whose_write_failed(
        start_bookie: StartBookie, make_factory: Factories,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The ack's write never reaches ZooKeeper: the ack holds in memory only, `flush`
    stores it (what the broker waits for before answering the client's retry), a new
    owner finds it, and a flush with nothing owed writes nothing."""
    start_bookie()

    async def scenario() -> None:
        async with _cursor_over(make_factory, 2) as (ledger, cursor, p):
            await _mark_delete_unanswered(ledger, cursor, p[0], monkeypatch, lands=False)
            assert cursor.persisted.mark_delete < p[0]

            await cursor.flush()
            assert cursor.persisted.mark_delete == p[0]
            writes: list[str] = []
            store, real_set = ledger.context.store, ledger.context.store.set

            def counted(path: str, data: bytes, expected_version: int) -> int:
                writes.append(path)
                return real_set(path, data, expected_version)

            monkeypatch.setattr(store, "set", counted)
            await cursor.flush()
            assert writes == []

        async with owner(make_factory, NAME) as reopened:
            assert reopened.cursors()["sub"].mark_delete_position == p[0]

    run(scenario())


def test_a_write_that_failed_is_written_again_with_no_acknowledgement_to_carry_it(
        start_bookie: StartBookie, make_factory: Factories,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The last acknowledgement of a consumer that has read everything fails to reach
    ZooKeeper, and nothing follows it: the cursor writes again by itself once ZooKeeper
    answers, so its stored state stops lagging the one in memory (an explore control
    found a topic's stats showing thousands of messages neither stored as acknowledged
    nor owed to the idle consumers, a ZooKeeper partition after)."""
    start_bookie()

    async def scenario() -> None:
        async with _cursor_over(make_factory, 2) as (ledger, cursor, p):
            await _mark_delete_unanswered(ledger, cursor, p[1], monkeypatch, lands=False)
            # Before the retry's first wait begins (the helper undid its own patches).
            monkeypatch.setattr(cursor_module, "OWED_RETRY_S", 0.1)
            assert cursor.persisted.mark_delete < p[1]
            for _ in range(50):
                if cursor.persisted.mark_delete == p[1]:
                    break
                await asyncio.sleep(0.1)
            assert cursor.persisted.mark_delete == p[1]

        async with owner(make_factory, NAME) as reopened:
            assert reopened.cursors()["sub"].mark_delete_position == p[1]

    run(scenario())


def test_an_entry_acknowledged_while_it_is_read_is_not_returned(
        start_bookie: StartBookie, make_factory: Factories,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A new owner reads from the cursor it took over while a consumer that had the
    message from the previous owner acknowledges it here: the read must not hand it out
    again (a duplicate after an answered acknowledgement, as a smoke run once found)."""
    start_bookie()

    async def scenario() -> None:
        async with _cursor_over(make_factory, 3) as (ledger, cursor, p):
            real_read = ledger.read

            async def acknowledged_meanwhile(positions: list[Position]) -> list:
                entries = await real_read(positions)
                await cursor.delete([p[1]])
                return entries

            monkeypatch.setattr(ledger, "read", acknowledged_meanwhile)
            assert [e.data for e in await cursor.read_entries(10)] == [b"m0", b"m2"]
            assert [e.data for e in await cursor.read_positions(p)] == [b"m0", b"m2"]

    run(scenario())


def test_mark_delete_with_properties_stores_both_in_one_write(
        start_bookie: StartBookie, make_factory: Factories) -> None:
    """How deduplication's snapshot reaches a new owner: the properties replace the old
    ones (a name left out is gone) together with the mark-delete they belong to."""
    start_bookie()

    async def scenario() -> None:
        async with owner(make_factory, NAME) as ledger:
            cursor = await ledger.open_cursor("pulsar.dedup", InitialPosition.LATEST)
            p = [await ledger.add_entry(b"m%d" % i) for i in range(3)]
            await cursor.mark_delete(p[0], {"gone": 7, "kept": 1})
            await cursor.mark_delete(p[1], {"kept": 2})

        async with owner(make_factory, NAME) as reopened:
            cursor = reopened.cursors()["pulsar.dedup"]
            assert (cursor.mark_delete_position, cursor.properties) == (p[1], {"kept": 2})
            assert [e.data for e in await cursor.read_entries(10)] == [b"m2"]

    run(scenario())


def test_latest_cursor_waits_and_rewinds(start_bookie: StartBookie,
                                         make_factory: Factories) -> None:
    start_bookie()

    async def scenario() -> None:
        async with owner(make_factory, NAME) as ledger:
            await ledger.add_entry(b"before the subscription")
            cursor = await ledger.open_cursor("sub", InitialPosition.LATEST)
            assert not cursor.has_more()
            waiting = asyncio.create_task(cursor.wait_for_more())
            await asyncio.sleep(0.05)
            assert not waiting.done()
            position = await ledger.add_entry(b"after")
            await asyncio.wait_for(waiting, 5)
            assert [e.data for e in await cursor.read_entries(10)] == [b"after"]
            assert await cursor.read_entries(10) == []
            cursor.rewind()
            assert [e.data for e in await cursor.read_positions([position])] == [b"after"]
            assert [e.data for e in await cursor.read_entries(10)] == [b"after"]
            await cursor.mark_delete(position)
            assert cursor.backlog() == 0 and await cursor.read_positions([position]) == []

    run(scenario())


def test_a_wait_for_more_returns_when_the_ledger_is_terminated(
        start_bookie: StartBookie, make_factory: Factories) -> None:
    """The dispatcher learns of the termination from the wait it is in (it tells its
    consumers the topic ended); the next wait lasts until the ledger closes."""
    start_bookie()

    async def scenario() -> None:
        async with owner(make_factory, NAME) as ledger:
            cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
            waiting = asyncio.create_task(cursor.wait_for_more())
            await asyncio.sleep(0.05)
            assert not waiting.done()
            await ledger.terminate()
            await asyncio.wait_for(waiting, 5)
            assert not cursor.has_more()

    run(scenario())


def test_reads_cross_ledgers_as_they_roll_over(start_bookie: StartBookie,
                                               make_factory: Factories) -> None:
    start_bookie()
    start_bookie()  # new ledgers spread over both

    async def scenario() -> None:
        async with owner(make_factory, NAME, max_entries_per_ledger=3) as ledger:
            cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
            positions = [await ledger.add_entry(b"m%d" % i) for i in range(10)]
            assert len({p.ledger_id for p in positions}) == 4
            read = [e.data for e in await cursor.read_entries(4)]
            read += [e.data for e in await cursor.read_entries(100)]
            assert read == [b"m%d" % i for i in range(10)]
            await cursor.mark_delete(positions[-1])
            assert cursor.backlog() == 0 and not cursor.has_more()

    run(scenario())


def _persisted_after_a_burst(start_bookie: StartBookie, make_factory: Factories,
                             mutants: str = "") -> tuple[Position, Position]:
    """Three acknowledgements in a row, each answered: (the mark-delete in memory, the
    one a new owner finds)."""
    start_bookie()

    async def scenario() -> tuple[Position, Position]:
        async with owner(make_factory, NAME, mutants=mutants) as ledger:
            cursor = await ledger.open_cursor("sub", InitialPosition.EARLIEST)
            p = [await ledger.add_entry(b"m%d" % i) for i in range(3)]
            for position in p:
                await cursor.mark_delete(position)
            in_memory = cursor.mark_delete_position
        async with owner(make_factory, NAME) as reopened:
            return in_memory, reopened.cursors()["sub"].mark_delete_position

    return run(scenario())


def test_every_answered_acknowledgement_is_stored(start_bookie: StartBookie,
                                                  make_factory: Factories) -> None:
    in_memory, stored = _persisted_after_a_burst(start_bookie, make_factory)
    assert stored == in_memory


def test_mutant_cursor_write_throttled_unflushed_stores_only_the_first(
        start_bookie: StartBookie, make_factory: Factories) -> None:
    in_memory, stored = _persisted_after_a_burst(start_bookie, make_factory,
                                                 "cursor-write-throttled-unflushed")
    assert stored < in_memory
