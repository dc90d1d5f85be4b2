"""`ManagedLedger` over bookies and ZooKeeper: one topic's log as a list of ledgers.

Only the newest ledger is written; the older ones are closed, each with its last entry id
recorded in the metadata. Opening as a new owner fences the newest ledger on its bookie,
records the last entry id the bookie reports, and appends a fresh ledger with a
compare-and-set: from the fence on, the previous owner's adds fail (OwnershipLost) and
readers see exactly what was durable when the fence landed. docs/storage.md has the
sequence and the metadata.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace

from impl.metadata import paths
from impl.metadata.errors import AlreadyExists, NotFound, VersionConflict
from impl.metadata.owned_node import OwnedNode
from impl.storage.api import (
    Entry,
    InitialPosition,
    ManagedCursor,
    OwnershipLost,
    Position,
    StorageError,
    TopicTerminated,
)
from impl.storage.context import StorageContext
from impl.storage.cursor import ManagedCursorImpl, NonDurableCursorImpl
from impl.storage.errors import BookieError, LedgerFenced, ManagedLedgerClosed, NoSuchLedger
from impl.storage.ledger_info import (
    CursorInfo,
    LedgerInfo,
    ManagedLedgerInfo,
    cursor_path,
    managed_ledger_path,
)
from impl.storage.positions import LedgerSequence, LedgerSpan

log = logging.getLogger(__name__)


@dataclass
class _WriteState:
    """The ledger being written: its next entry id and whether an add failed on it."""

    info: LedgerInfo
    next_entry_id: int = 0
    broken: bool = False
    """An add failed with its outcome unknown: fence and replace the ledger before the
    next add, so entry ids on the bookie and here agree again."""


class ManagedLedgerImpl:
    """Open with `ManagedLedgerImpl.open` (through `ManagedLedgerFactory`)."""

    def __init__(self, name: str, ctx: StorageContext, info: ManagedLedgerInfo,
                 version: int) -> None:
        self.name = name
        self.path = managed_ledger_path(name)
        self._ctx = ctx
        self._info = info
        self._node = OwnedNode(ctx.store, self.path, version)
        self.sequence = LedgerSequence([
            LedgerSpan(ledger.ledger_id,
                       -1 if ledger.last_entry_id is None else ledger.last_entry_id,
                       open=ledger.last_entry_id is None)
            for ledger in info.ledgers])
        open_ledgers = [ledger for ledger in info.ledgers if ledger.last_entry_id is None]
        self._writing = _WriteState(open_ledgers[-1]) if open_ledgers else None
        self._cursors: dict[str, ManagedCursorImpl] = {}
        self._metadata_lock = asyncio.Lock()
        self._waiting_for_ledger = 0
        self._adds_in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._terminating = False
        self._lost: OwnershipLost | None = None
        self._closed = False
        self._entries_added: asyncio.Future[None] | None = None

    # --- opening -----------------------------------------------------------------------

    @classmethod
    async def open(cls, name: str, ctx: StorageContext) -> ManagedLedgerImpl:
        """Take over the managed ledger `name` (creating it when new): recover and close the
        previous owner's ledger, start a ledger of our own, load the cursors."""
        path = managed_ledger_path(name)
        try:
            await ctx.blocking(ctx.store.create, path, ManagedLedgerInfo().to_json())
        except AlreadyExists:
            pass
        raw, version = await ctx.blocking(ctx.store.get, path)
        info = ManagedLedgerInfo.from_json(raw)
        ledgers = list(info.ledgers)
        if ledgers and ledgers[-1].last_entry_id is None:
            ledgers[-1] = replace(ledgers[-1],
                                  last_entry_id=await _recover_ledger(ledgers[-1], ctx))
        new = None if info.terminated else await ctx.create_ledger()
        info = replace(info, ledgers=(*ledgers, *([new] if new else [])))
        try:
            version = await ctx.blocking(ctx.store.set, path, info.to_json(), version)
        except VersionConflict:
            if new is not None:
                await _discard(new, ctx)
            raise OwnershipLost(f"{name}: another owner opened the managed ledger while we "
                                "did") from None
        ledger = cls(name, ctx, info, version)
        await ledger._load_cursors()
        log.info("opened managed ledger %s: ledgers %s", name,
                 [entry.ledger_id for entry in info.ledgers])
        return ledger

    async def _load_cursors(self) -> None:
        for child in await self._ctx.blocking(self._ctx.store.children, self.path):
            name = paths.decode(child)
            try:
                # Rewritten unchanged: the new version makes a stale owner's next write to
                # the cursor fail instead of silently moving it behind our back.
                raw, version = await self._ctx.blocking(self._ctx.store.update,
                                                        cursor_path(self.name, name), _same)
            except NotFound:
                continue
            self._cursors[name] = ManagedCursorImpl(name, self, CursorInfo.from_json(raw),
                                                    version)

    # --- the ManagedLedger contract ------------------------------------------------------

    @property
    def last_confirmed(self) -> Position | None:
        return self.sequence.last_position

    @property
    def terminated(self) -> bool:
        return self._info.terminated

    @property
    def closed(self) -> bool:
        return self._closed

    async def add_entry(self, data: bytes) -> Position:
        self._check_writable()
        writing = await self._writable_ledger()
        self._check_writable()
        ledger_id, entry_id = writing.info.ledger_id, writing.next_entry_id
        writing.next_entry_id += 1
        self._adds_in_flight += 1
        self._idle.clear()
        try:
            await self._ctx.bookies.client(writing.info.bookies[0]).add(ledger_id, entry_id, data)
        except LedgerFenced as exc:
            raise self._ownership_lost(f"ledger {ledger_id} was fenced by a newer owner") from exc
        except BaseException:  # unknown outcome (failed, timed out, cancelled)
            writing.broken = True
            raise
        finally:
            self._adds_in_flight -= 1
            if self._adds_in_flight == 0:
                self._idle.set()
        self._confirm(ledger_id, entry_id)
        return Position(ledger_id, entry_id)

    async def terminate(self) -> Position | None:
        async with self._metadata_lock:
            if self._info.terminated:
                return self._info.last_position
            self._check_open()
            self._terminating = True
            try:
                await self._idle.wait()
                ledgers = await self._closed_ledger_list()
                last = self.sequence.last_position
                await self._write_info(replace(self._info, ledgers=ledgers, terminated=True,
                                               last_position=last))
            except BaseException:
                self._terminating = False
                raise
            self._signal_entries()
            log.info("terminated managed ledger %s at %s", self.name, last)
            return last

    async def open_cursor(self, name: str, initial: InitialPosition) -> ManagedCursor:
        self._check_open()
        if name in self._cursors:
            return self._cursors[name]
        info = CursorInfo(self._initial_mark_delete(initial))
        path = cursor_path(self.name, name)
        try:
            await self._ctx.blocking(self._ctx.store.create, path, info.to_json())
            version = 0
        except AlreadyExists:  # created by an earlier owner after we loaded the cursors
            raw, version = await self._ctx.blocking(self._ctx.store.get, path)
            info = CursorInfo.from_json(raw)
        cursor = self._cursors.setdefault(name, ManagedCursorImpl(name, self, info, version))
        return cursor

    def open_non_durable_cursor(self, name: str, start: Position | None,
                                initial: InitialPosition) -> ManagedCursor:
        self._check_open()
        return NonDurableCursorImpl(name, self, self._initial_mark_delete(initial), start)

    def _initial_mark_delete(self, initial: InitialPosition) -> Position:
        if initial == InitialPosition.EARLIEST:
            return self.sequence.before_first()
        return self.last_confirmed or self.sequence.before_first()

    async def delete_cursor(self, name: str) -> None:
        self._cursors.pop(name, None)
        try:
            await self._ctx.blocking(self._ctx.store.delete, cursor_path(self.name, name))
        except NotFound:
            pass

    def cursors(self) -> dict[str, ManagedCursor]:
        return dict(self._cursors)

    async def close(self) -> None:
        """Close our ledger (so the next owner need not fence it) and forget everything.
        Losing a race to a new owner here is fine: it recovers the ledger either way."""
        if self._closed:
            return
        self._closed = True
        self._signal_entries()
        async with self._metadata_lock:
            if self._writing is None or self._lost is not None:
                return
            await self._idle.wait()
            try:
                ledgers = await self._closed_ledger_list()
                await self._write_info(replace(self._info, ledgers=ledgers))
            except (StorageError, OwnershipLost) as exc:
                log.warning("closing managed ledger %s: %s", self.name, exc)
        log.info("closed managed ledger %s", self.name)

    async def delete(self) -> None:
        """Delete every ledger on its bookie, then the metadata with the cursors."""
        self._closed = True
        self._signal_entries()
        async with self._metadata_lock:
            await self._idle.wait()
            for ledger in self._info.ledgers:
                try:
                    await self._ctx.bookies.client(ledger.bookies[0]).delete(ledger.ledger_id)
                except NoSuchLedger:
                    pass
            self._cursors.clear()
            await self._ctx.blocking(self._delete_metadata)
        log.info("deleted managed ledger %s", self.name)

    def _delete_metadata(self) -> None:
        try:
            self._ctx.store.delete(self.path, recursive=True)
        except NotFound:
            pass

    # --- reading (for cursors) ---------------------------------------------------------

    async def read(self, positions: list[Position]) -> list[Entry]:
        """The entries at `positions` (which must exist), in the order given."""
        wanted: dict[int, set[int]] = {}
        for position in positions:
            wanted.setdefault(position.ledger_id, set()).add(position.entry_id)
        found: dict[Position, bytes] = {}
        for ledger_id, entry_ids in wanted.items():
            bookie = self._ledger_info(ledger_id).bookies[0]
            first, last = min(entry_ids), max(entry_ids)
            while first <= last:
                batch = await self._ctx.bookies.client(bookie).read(ledger_id, first, last)
                for entry in batch:
                    if entry.entry_id in entry_ids:
                        found[Position(ledger_id, entry.entry_id)] = entry.data
                first = batch[-1].entry_id + 1
        return [Entry(position, found[position]) for position in positions]

    async def find_first(self, matches: Callable[[Entry], bool]) -> Position | None:
        positions = list(self.sequence.positions_from(self.sequence.before_first()))
        low, high = 0, len(positions)  # the first match lies in positions[low:high + 1]
        while low < high:
            middle = (low + high) // 2
            (entry,) = await self.read([positions[middle]])
            if matches(entry):
                high = middle
            else:
                low = middle + 1
        return positions[low] if low < len(positions) else None

    async def wait_for_entries(self) -> None:
        """Return after the next add is confirmed, or when the ledger terminates or
        closes; a terminated ledger takes no more adds, so on one only the close is left."""
        if self._closed:
            return
        if self._entries_added is None:
            self._entries_added = asyncio.get_running_loop().create_future()
        await asyncio.shield(self._entries_added)

    @property
    def context(self) -> StorageContext:
        return self._ctx

    # --- internals ---------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise ManagedLedgerClosed(self.name)

    def _check_writable(self) -> None:
        if self._lost is not None:
            raise self._lost
        if self._info.terminated or self._terminating:
            raise TopicTerminated(f"{self.name} is terminated at {self._info.last_position}")
        self._check_open()

    def _ownership_lost(self, reason: str) -> OwnershipLost:
        if self._lost is None:
            self._lost = OwnershipLost(f"{self.name}: {reason}")
            log.warning("managed ledger %s lost ownership: %s", self.name, reason)
        return self._lost

    def _ledger_info(self, ledger_id: int) -> LedgerInfo:
        for ledger in self._info.ledgers:
            if ledger.ledger_id == ledger_id:
                return ledger
        raise NoSuchLedger(self.name, f"ledger {ledger_id} is not part of it")

    def _confirm(self, ledger_id: int, entry_id: int) -> None:
        span = self.sequence.spans[-1]
        if span.ledger_id == ledger_id and entry_id > span.last_entry_id:
            span.last_entry_id = entry_id
        self._signal_entries()

    def _signal_entries(self) -> None:
        if self._entries_added is not None:
            self._entries_added.set_result(None)
            self._entries_added = None

    async def _writable_ledger(self) -> _WriteState:
        """The ledger the next add goes to. Callers get their entry ids in call order:
        while anyone waits for a rollover, later adds queue behind them."""
        writing = self._writing
        if (writing is not None and not writing.broken and self._waiting_for_ledger == 0
                and not self._metadata_lock.locked()
                and writing.next_entry_id < self._ctx.config.max_entries_per_ledger):
            return writing
        self._waiting_for_ledger += 1
        try:
            async with self._metadata_lock:
                self._check_writable()
                if self._writing is None or (self._writing is writing and (
                        writing.broken or
                        writing.next_entry_id >= self._ctx.config.max_entries_per_ledger)):
                    await self._roll_over()
                assert self._writing is not None
                return self._writing
        finally:
            self._waiting_for_ledger -= 1

    async def _roll_over(self) -> None:
        """Close the ledger being written and continue in a new one."""
        await self._idle.wait()
        ledgers = list(await self._closed_ledger_list())
        new = await self._ctx.create_ledger()
        try:
            await self._write_info(replace(self._info, ledgers=(*ledgers, new)))
        except OwnershipLost:
            await _discard(new, self._ctx)
            raise
        self.sequence.spans.append(LedgerSpan(new.ledger_id, -1, open=True))
        self._writing = _WriteState(new)

    async def _closed_ledger_list(self) -> tuple[LedgerInfo, ...]:
        """The ledger list with the ledger being written closed on its bookie. A ledger
        whose add failed is fenced first: the bookie, not our count, knows its last entry.
        Call with the metadata lock held and no add in flight."""
        writing = self._writing
        if writing is not None:
            client = self._ctx.bookies.client(writing.info.bookies[0])
            ledger_id = writing.info.ledger_id
            try:
                if writing.broken:
                    last = await client.fence(ledger_id)
                else:
                    last = self.sequence.spans[-1].last_entry_id
                await client.close_ledger(ledger_id, last)
            except LedgerFenced as exc:
                raise self._ownership_lost(f"ledger {ledger_id} was fenced by a newer "
                                           "owner") from exc
            span = self.sequence.spans[-1]
            span.last_entry_id, span.open = last, False
            self._writing = None
        # Closed here but perhaps not yet in the metadata (a rollover that failed after
        # closing): the spans know.
        closed = {span.ledger_id: span.last_entry_id for span in self.sequence.spans
                  if not span.open}
        return tuple(replace(ledger, last_entry_id=closed[ledger.ledger_id])
                     if ledger.last_entry_id is None and ledger.ledger_id in closed else ledger
                     for ledger in self._info.ledgers)

    async def _write_info(self, info: ManagedLedgerInfo) -> None:
        try:
            await self._ctx.blocking(self._node.write, info.to_json())
        except VersionConflict:
            raise self._ownership_lost("its metadata was changed by another owner") from None
        self._info = info


async def _recover_ledger(ledger: LedgerInfo, ctx: StorageContext) -> int:
    """The last entry id of the previous owner's ledger, after which it can never change:
    fence it (its writer's next add fails), then close it there.

    Mutant `no-fencing` (PIP-57 and the ownership model: a new owner must fence the previous
    owner's ledger before writing) only asks the bookie for the last entry, without fencing
    or closing: a paused old owner keeps appending to a ledger we treat as closed."""
    client = ctx.bookies.client(ledger.bookies[0])
    try:
        if ctx.mutants.on("no-fencing"):
            return await client.last_entry_id(ledger.ledger_id)
        last = await client.fence(ledger.ledger_id)
        await client.close_ledger(ledger.ledger_id, last)
        return last
    except NoSuchLedger:
        log.warning("ledger %d is not on bookie %s; recovering it as empty", ledger.ledger_id,
                    ledger.bookies[0])
        return -1


async def _discard(ledger: LedgerInfo, ctx: StorageContext) -> None:
    """Delete a ledger we created but never got into the metadata (best effort: an
    orphan only wastes space)."""
    try:
        await ctx.bookies.client(ledger.bookies[0]).delete(ledger.ledger_id)
    except BookieError as exc:
        log.warning("could not delete unused ledger %d: %s", ledger.ledger_id, exc)


def _same(data: bytes) -> bytes:
    return data
