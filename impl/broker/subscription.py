"""One subscription of one topic: its durable cursor, its consumers, and the messages that
are out at consumers and not yet acknowledged.

A single task per subscription moves entries from the cursor to consumers. Entries waiting
for delivery (new reads, and messages taken back for redelivery) are kept in position
order; each pass offers them, oldest first, to the dispatcher of the subscription type.
Messages are taken back from a consumer when it asks (a negative acknowledgement), when
it disconnects, and when Failover makes another consumer active; each time their
redelivery count grows, and MESSAGE carries it.

An entry leaves the cursor only once every message in it is acknowledged (impl/broker/
acks.py); a partly acknowledged batch is redelivered with an ack set, so the client skips
what it acknowledged already. An acknowledgement is checked against what the topic holds
before it changes anything: a position past the last written entry, or a batch index or
ack set beyond the stored entry's batch, is refused (ACK_RESPONSE with an error when the
client asked for a receipt, else one log line).

An entry read from storage that the official client could not decode (one written past
the broker's checks, straight into a bookie) is acknowledged and reported instead of
dispatched: a log line naming its position, and `unreadableEntriesSkipped` in the stats.
Pulsar acknowledges an entry whose metadata does not parse the same way; left in place, it
would stop the subscription for good, or crash every consumer it reached.

Delayed messages (`deliver_at_time`) read by a Shared or Key_Shared subscription wait in
the delayed-delivery tracker (impl/broker/delayed.py) and are read again once due.

A reader's subscription is non-durable: its cursor lives in memory only, and the topic
drops it with its last consumer. SEEK resets any subscription (`reset`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from impl.broker import commands
from impl.broker.acks import (
    AckOutOfRange,
    bits_of,
    check_within,
    covers_entry_through,
    remaining_after,
    words_of,
)
from impl.broker.consumer import Consumer
from impl.broker.delayed import DelayedDeliveryTracker
from impl.broker.dispatch import Dispatcher, dispatcher_for
from impl.broker.entries import DispatchEntry
from impl.broker.errors import AckRefused, ConsumerBusy, ConsumerNotFound, server_error
from impl.metadata.errors import MetadataError
from impl.mutants import NONE, Mutants
from impl.replication.broker_hooks import NO_SUBSCRIPTION_HOOKS, SubscriptionHooks
from impl.storage.api import Entry, ManagedCursor, OwnershipLost, Position, StorageError
from wire.frames import BadEntry, MalformedFrame
from wire.pulsar_api_pb2 import CommandAck, CommandSubscribe, MessageIdData

log = logging.getLogger(__name__)

READ_BATCH = 100
"""Entries read from the cursor at most per pass."""
READ_AHEAD = 1000
"""Entries held for delivery at most before reading stops (consumers without permits,
keys waiting for their previous consumer)."""
IDLE_CHECK = 1.0
"""Seconds between checks while idle (termination needs no event to be noticed)."""


def position_of(message: MessageIdData) -> Position:
    """The position a message id names. Ids travel as unsigned 64-bit numbers but mean
    signed ones: -1 (the earliest message id, an entry before the first) arrives as
    2**64 - 1 and stays -1."""
    return Position(_signed(message.ledgerId), _signed(message.entryId))


def _now_ms() -> int:
    """Wall-clock milliseconds, the clock `deliver_at_time` is written in."""
    return int(time.time() * 1000)


def _signed(value: int) -> int:
    return value - 2**64 if value >= 2**63 else value


@dataclass
class _Unacked:
    entry: DispatchEntry
    consumer: Consumer


class Subscription:
    def __init__(self, name: str, cursor: ManagedCursor, sub_type: int,
                 terminated: Callable[[], bool],
                 hooks: SubscriptionHooks = NO_SUBSCRIPTION_HOOKS, durable: bool = True,
                 mutants: Mutants = NONE,
                 last_written: Callable[[], Position | None] = lambda: None,
                 on_fenced: Callable[[], None] = lambda: None) -> None:
        self.name = name
        self._on_fenced = on_fenced
        """Called when the cursor's write found another owner's version: the topic must
        leave this broker, as when an add finds the ledger fenced."""
        self._last_written = last_written
        """The topic's last entry: no acknowledgement may reach beyond it."""
        self._mutants = mutants
        self._hooks = hooks
        hooks.attach(self.move_mark_delete)
        self.cursor = cursor
        self.durable = durable
        self.sub_type = sub_type
        self.dispatcher: Dispatcher = dispatcher_for(sub_type)
        self._terminated = terminated
        self._unacked: dict[Position, _Unacked] = {}
        self._to_deliver: dict[Position, DispatchEntry] = {}
        self._remaining: dict[Position, set[int]] = {}
        self._redeliveries: dict[Position, int] = {}
        self._delayed = DelayedDeliveryTracker()
        self._wakeup = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._more: asyncio.Task[None] | None = None
        self.messages_out = 0
        self.unreadable_skipped = 0

    # --- consumers ---------------------------------------------------------------------

    @property
    def consumers(self) -> list[Consumer]:
        return list(self.dispatcher.consumers)

    def add_consumer(self, consumer: Consumer, sub_type: int) -> None:
        self._join(consumer, sub_type)
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"dispatch {self.name}")
        self._wakeup.set()

    def _join(self, consumer: Consumer, sub_type: int) -> None:
        """Take `consumer` in; a subscription without consumers takes the new type."""
        if sub_type != self.sub_type:
            if self.dispatcher.consumers:
                raise ConsumerBusy(
                    f"subscription {self.name} is {self.dispatcher.sub_type_name} with "
                    f"connected consumers; cannot join as "
                    f"{CommandSubscribe.SubType.Name(sub_type)}")
            self.sub_type, self.dispatcher = sub_type, dispatcher_for(sub_type)
        self._take_back(self.dispatcher.add(consumer))

    def remove_consumer(self, consumer: Consumer) -> None:
        """A consumer left (closed, disconnected): its unacknowledged messages go to the
        others (Shared, Key_Shared), to the new active consumer (Failover), or wait for
        the next consumer."""
        moved = self.dispatcher.remove(consumer)
        if self._mutants.on("closed-consumer-keeps-unacked"):
            # Still counted as out at a consumer that is gone: never delivered again.
            self._take_back([c for c in moved if c is not consumer])
        else:
            self._take_back([consumer, *moved])
        self._wakeup.set()

    def flow(self, consumer: Consumer, permits: int) -> None:
        consumer.add_permits(permits)
        self._wakeup.set()

    def redeliver(self, consumer: Consumer, messages: list[MessageIdData]) -> None:
        """REDELIVER_UNACKNOWLEDGED_MESSAGES: the listed messages of this consumer, or all
        of them when none is listed."""
        if not messages:
            self._take_back([consumer])
        else:
            wanted = {position_of(m) for m in messages}
            owed = [p for p in wanted
                    if p in self._unacked and self._unacked[p].consumer is consumer]
            if self._mutants.on("nack-not-redelivered"):
                for position in owed:  # out at nobody, queued for nobody: never again
                    self._forget(position)
            else:
                self._return(owed)
        self._wakeup.set()

    async def reset(self, read_from: Position) -> None:
        """SEEK, as Pulsar's resetCursor does it: every consumer is disconnected (CLOSE_CONSUMER;
        the clients subscribe again), what was out at them and their redelivery counts
        are forgotten, and the cursor starts over at `read_from`, so everything from there
        on is delivered again. A consumer that subscribes meanwhile reads from the new
        position: the cursor moves before the first wait."""
        for consumer in self.consumers:
            consumer.close_by_broker()
        self.stop_dispatching()
        self.dispatcher = dispatcher_for(self.sub_type)
        if not self._mutants.on("seek-keeps-redelivery-state"):
            for pending in (self._unacked, self._to_deliver, self._remaining,
                            self._redeliveries):
                pending.clear()
            self._delayed.clear()
        await self.cursor.reset(read_from)
        self._hooks.acknowledged()  # replicated subscriptions: mark-delete may have moved

    def _take_back(self, consumers: list[Consumer]) -> None:
        if consumers:
            self._return([p for p, u in self._unacked.items() if u.consumer in consumers])

    def _return(self, positions: list[Position]) -> None:
        for position in positions:
            unacked = self._unacked.pop(position)
            self.dispatcher.settled(unacked.entry, unacked.consumer)
            self._to_deliver[position] = unacked.entry
            self._redeliveries[position] = self._redeliveries.get(position, 0) + 1

    # --- acknowledgements ----------------------------------------------------------------

    async def acknowledge(self, consumer: Consumer, ack: CommandAck) -> None:
        """Apply an ACK (persisted through the cursor), answering ACK_RESPONSE when the
        client asked for one."""
        error: BaseException | None = None
        if consumer.closed:
            # Disconnected since the ACK arrived: by a SEEK that came just before it (the
            # client flushes its pending acknowledgements as it seeks), whose reset must
            # win as it does in Pulsar, or by an unload. Either way the ACK goes with it.
            error = ConsumerNotFound(consumer.consumer_id)
        else:
            try:
                if ack.ack_type == CommandAck.Cumulative:
                    if len(ack.message_id) != 1:
                        raise AckRefused(f"a cumulative ACK names {len(ack.message_id)} "
                                         f"message ids, not one")
                    await self._ack_cumulative(ack.message_id[0], consumer)
                else:
                    await self._ack_individual(list(ack.message_id))
                # A retried acknowledgement finds its position applied already, but the
                # write that failed the first time may still be owed.
                await self.cursor.flush()
            except (StorageError, MetadataError, AckRefused) as exc:
                # A metadata store that is away (a lost ZooKeeper session) is answered
                # too: the client retries after its back-off, not after its timeout.
                log.warning("acknowledgement from %s on %s refused: %s", consumer.peer.address,
                            self.name, exc)
                error = exc
                if isinstance(exc, OwnershipLost):
                    # Another broker opened the topic since: keeping its consumers here
                    # would deliver from a ledger that no longer grows, and drop their acks.
                    self._on_fenced()
            self._hooks.acknowledged()  # replicated subscriptions: mark-delete may have moved
        if ack.HasField("request_id"):
            consumer.peer.send(commands.ack_response(
                consumer.consumer_id, ack.request_id,
                None if error is None else server_error(error), str(error or "")))
        if self._to_deliver:
            self._wakeup.set()  # a Key_Shared key may be free to move on

    def _entry_at(self, position: Position) -> DispatchEntry | None:
        if position in self._unacked:
            return self._unacked[position].entry
        return self._to_deliver.get(position)

    async def _acknowledged_entry(self, message: MessageIdData) -> DispatchEntry | None:
        """The entry `message` names, its batch part checked against the stored entry;
        None when the entry is acknowledged already. Raises `AckRefused` for a position
        the topic never wrote or a part of a batch that does not exist."""
        position = position_of(message)
        entry = self._entry_at(position)
        if entry is None:
            if position <= self.cursor.mark_delete_position:
                return None
            last = self._last_written()
            if (last is None or position > last or position.ledger_id < 0
                    or position.entry_id < 0):
                raise AckRefused(f"no message at {position}: the last written is {last}")
            stored = await self.cursor.read_positions([position])
            if not stored:
                return None  # acknowledged individually already
            try:
                entry = DispatchEntry.of(stored[0])
            except MalformedFrame as exc:
                raise AckRefused(f"the entry at {position} is unreadable: {exc}") from None
        try:
            check_within(message, entry.num_messages)
        except AckOutOfRange as exc:
            raise AckRefused(f"at {position}: {exc}") from None
        return entry

    async def _ack_individual(self, messages: list[MessageIdData]) -> None:
        """Acknowledge every message that checks out; refuse the others afterwards."""
        whole, refused = [], []
        for message in messages:
            position = position_of(message)
            try:
                entry = await self._acknowledged_entry(message)
            except AckRefused as exc:
                refused.append(exc)
                continue
            if entry is None:
                continue
            left = remaining_after(message, self._remaining.get(position), entry.num_messages)
            if left:
                self._remaining[position] = left
            else:
                whole.append(position)
                self._forget(position)
        if whole:
            await self.cursor.delete(whole)
        if refused:
            raise AckRefused(f"{len(refused)} of {len(messages)} message ids refused, "
                             f"first: {refused[0]}")

    async def _ack_cumulative(self, message: MessageIdData, consumer: Consumer) -> None:
        position = position_of(message)
        if self._mutants.on("cumulative-ack-through-dispatched"):
            # Everything sent to this consumer so far counts as done, read or not.
            position = max([position, *(p for p, u in self._unacked.items()
                                        if u.consumer is consumer)])
        if position.ledger_id < 0:
            raise AckRefused(f"no message at {position}")
        if position.entry_id < 0:
            # `ledger:-1`: nothing of this ledger, everything before it (the C++ client
            # acknowledges "the entry before" a partly acknowledged first batch this way).
            last = self._last_written()
            if last is None or position.ledger_id > last.ledger_id:
                raise AckRefused(f"no ledger {position.ledger_id}: the last written is {last}")
            await self._ack_before(Position(position.ledger_id, 0))
            return
        if position <= self.cursor.mark_delete_position:
            return  # nothing new; the mark-delete never moves back
        entry = await self._acknowledged_entry(message)
        if entry is not None and not covers_entry_through(message, entry.num_messages):
            # Part of this batch is acknowledged; everything before it entirely.
            left = (bits_of(list(message.ack_set)) if message.ack_set
                    else set(range(message.batch_index + 1, entry.num_messages)))
            self._remaining[position] = left & self._remaining.get(position, left)
            await self._ack_before(position)
            return
        await self._mark_delete_through(position)

    async def _ack_before(self, position: Position) -> None:
        """Acknowledge everything before `position` (exclusive)."""
        if position.entry_id > 0:
            await self._mark_delete_through(Position(position.ledger_id, position.entry_id - 1))
            return
        # The entry before the first of a ledger is in an earlier ledger we cannot name
        # here: acknowledge what we delivered before it one by one.
        earlier = [p for p in self._unacked if p < position]
        for p in earlier:
            self._forget(p)
        if earlier:
            await self.cursor.delete(earlier)

    async def _mark_delete_through(self, position: Position) -> None:
        for p in [p for p in (*self._unacked, *self._to_deliver) if p <= position]:
            self._forget(p)
        await self.cursor.mark_delete(position)

    async def skip_through(self, position: Position) -> None:
        """The admin API's skip, clear-backlog and expiry: everything at or before
        `position` counts as acknowledged, delivered or not. As in Pulsar only the
        cursor moves: consumers keep what they already hold, and acknowledging it later
        changes nothing."""
        await self._mark_delete_through(position)
        self._hooks.acknowledged()  # replicated subscriptions: mark-delete moved
        self._wakeup.set()

    async def move_mark_delete(self, position: Position) -> None:
        """Replicated subscriptions: another cluster's acknowledgements moved the
        mark-delete here. What was out or queued at or below it is acknowledged now, and
        must not be dispatched (again) from this cluster."""
        await self._mark_delete_through(position)
        self._wakeup.set()

    def _forget(self, position: Position) -> None:
        unacked = self._unacked.pop(position, None)
        if unacked is not None:
            self.dispatcher.settled(unacked.entry, unacked.consumer)
        self._to_deliver.pop(position, None)
        self._remaining.pop(position, None)
        self._redeliveries.pop(position, None)
        self._delayed.discard(position)

    # --- dispatching ---------------------------------------------------------------------

    async def _run(self) -> None:
        # A stopped loop ends at its next turn even if a cancel got lost on the way.
        while self._task is asyncio.current_task():
            self._wakeup.clear()
            try:
                progressed = await self._pass()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("dispatching %s failed; retrying", self.name)
                # The failed pass may have read entries it had not queued yet (a metadata
                # store away when it acknowledged the markers or unreadable entries among
                # them): behind the read position they would wait for the topic's next
                # owner. Read again from the first unacknowledged entry.
                self.cursor.rewind()
                progressed = False
                await asyncio.sleep(IDLE_CHECK)
            if not progressed:
                await self._idle()

    async def _pass(self) -> bool:
        """One pass: read what is needed, deliver what can go. True if anything moved."""
        self._check_end_of_topic()
        if not self.dispatcher.ready():
            return False
        read = 0
        if len(self._to_deliver) < READ_AHEAD and self.cursor.has_more():
            wanted = sum(c.permits for c in self.dispatcher.consumers if c.permits > 0)
            batch = await self.cursor.read_entries(max(1, min(READ_BATCH, wanted)))
            read = len(batch)  # markers count as progress although none is delivered
            readable = await self._readable(batch)
            for stored in await self._hooks.admit([e for e in batch if e.position in readable]):
                if stored.position not in self._unacked:
                    self._hold_or_queue(readable[stored.position])
        await self._release_due()
        sent = self._deliver()
        if sent:
            peers = {id(c.peer): c.peer for c in self.consumers}.values()
            await asyncio.gather(*(peer.drain() for peer in peers))
        return bool(read or sent)

    async def _readable(self, batch: list[Entry]) -> dict[Position, DispatchEntry]:
        """The entries of `batch` a consumer can be sent, by position, made ready for
        dispatch; the others are acknowledged."""
        readable, unreadable = {}, []
        for stored in batch:
            try:
                readable[stored.position] = DispatchEntry.of(stored, checked=True)
            except BadEntry as exc:
                log.warning("%s: skipped the unreadable entry %s: %s", self.name,
                            stored.position, exc)
                unreadable.append(stored.position)
        if unreadable:
            self.unreadable_skipped += len(unreadable)
            for position in unreadable:
                self._forget(position)
            await self.cursor.delete(unreadable)
        return readable

    def _hold_or_queue(self, entry: DispatchEntry) -> None:
        """Queue `entry` for delivery, unless it is a delayed message not yet due."""
        honoured = (self.dispatcher.honours_delivery_time
                    and not self._mutants.on("deliver-at-ignored"))  # PIP-26's contract
        if not (honoured and self._delayed.track(entry.position, entry.deliver_at, _now_ms())):
            self._to_deliver[entry.position] = entry

    async def _release_due(self) -> None:
        """Read again the delayed messages whose time has come (all of them once the
        subscription's type no longer honours delivery times) and queue them."""
        due = (self._delayed.take_due(_now_ms()) if self.dispatcher.honours_delivery_time
               else self._delayed.take_all())
        if due:
            for stored in await self.cursor.read_positions(due):
                if stored.position not in self._unacked:
                    self._to_deliver[stored.position] = DispatchEntry.of(stored)

    def _deliver(self) -> int:
        sent = 0
        self.dispatcher.begin_round()
        for position in sorted(self._to_deliver):
            entry = self._to_deliver[position]
            consumer = self.dispatcher.route(entry)
            if consumer is None:
                if self.dispatcher.ordered:
                    break
                continue
            del self._to_deliver[position]
            remaining = self._remaining.get(position)
            consumer.deliver(entry, self._redeliveries.get(position, 0),
                             words_of(remaining, entry.num_messages) if remaining else None)
            self._unacked[position] = _Unacked(entry, consumer)
            self.dispatcher.delivered(entry, consumer)
            self.messages_out += entry.num_messages
            sent += 1
            if not self.dispatcher.ready():
                break
        return sent

    def _check_end_of_topic(self) -> None:
        if self._terminated() and not self._to_deliver and not self.cursor.has_more():
            for consumer in self.dispatcher.consumers:
                consumer.tell_end_of_topic()

    async def _idle(self) -> None:
        waits: list[asyncio.Future[object]] = [asyncio.ensure_future(self._wakeup.wait())]
        if not self.cursor.has_more():
            if self._more is None or self._more.done():
                self._more = asyncio.create_task(self.cursor.wait_for_more())
            waits.append(self._more)  # type: ignore[arg-type]
        next_due = self._delayed.seconds_to_next(_now_ms())
        timeout = IDLE_CHECK if next_due is None else min(IDLE_CHECK, next_due)
        await asyncio.wait(waits, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        waits[0].cancel()

    # --- lifecycle ---------------------------------------------------------------------

    def stop_dispatching(self) -> None:
        """Cancel the dispatch loop; the next consumer to join starts a new one."""
        for task in (self._task, self._more):
            if task is not None:
                task.cancel()
        self._task = self._more = None

    async def close(self) -> None:
        """Stop dispatching (the topic is unloading or the subscription is deleted)."""
        tasks = [task for task in (self._task, self._more) if task is not None]
        self.stop_dispatching()
        for task in tasks:
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        # What was out at consumers goes out again from whoever opens the cursor next.
        self.cursor.rewind()

    def stats(self) -> dict[str, Any]:
        """Pulsar's subscription stats: as there, the unacknowledged count is each
        connected consumer's, and the subscription's is their sum (a message still held
        for a consumer that is gone is in the backlog but out at no one)."""
        out_at: Counter[int] = Counter()
        for unacked in self._unacked.values():
            out_at[id(unacked.consumer)] += unacked.entry.num_messages
        consumers = [{**c.stats(), "unackedMessages": out_at[id(c)]}
                     for c in self.dispatcher.consumers]
        return {
            "type": self.dispatcher.sub_type_name,
            "isDurable": self.durable,
            "consumers": consumers,
            "msgOutCounter": self.messages_out,
            "unackedMessages": sum(c["unackedMessages"] for c in consumers),
            "msgDelayed": len(self._delayed),
            "unreadableEntriesSkipped": self.unreadable_skipped,
        }
