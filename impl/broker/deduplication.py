"""Broker-side message deduplication of one topic (Pulsar's MessageDeduplication).

While it is on, the topic remembers per producer name the highest sequence id it accepted
for writing ("pushed") and the highest one durably written ("persisted"). A SEND whose
sequence id is not above the pushed one is not written again: when it is not above the
persisted one either, it was stored before and is answered with a receipt for message id
-1:-1; otherwise its earlier copy is still being written, so nobody knows yet whether it
will be stored, and it is refused with SEND_ERROR (the client reconnects and resends, and
by then the answer is known). A batch counts by its highest sequence id; of a chunked
message only the last chunk counts; a replicator's writes count under the producer and
sequence id of the original message (as Pulsar's first replication scheme does).

The persisted map must outlive this owner: every `snapshot_interval` entries it is stored
as the properties of the `pulsar.dedup` cursor, in the same write that moves the cursor's
mark-delete to the entry it holds for. A new owner starts from those properties and replays
the entries after the mark-delete, reading the producer and sequence ids from their
metadata; producers are let in only once that is done (`ready()`). A snapshot is taken
only when no write is in flight, so every entry up to its position is in the map.

Switching it off deletes the cursor and forgets the map, as Pulsar does.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, replace
from typing import Any

from impl.broker.dedup_policy import DeduplicationPolicy
from impl.metadata.store import Watch
from impl.mutants import Mutants
from impl.naming.topic_name import TopicName
from impl.storage.api import (
    InitialPosition,
    ManagedCursor,
    ManagedLedger,
    Position,
    StorageError,
)
from impl.system_cursors import DEDUPLICATION_CURSOR, REPLICATOR_PREFIX
from wire.frames import MalformedFrame, split_entry
from wire.pulsar_api_pb2 import CommandSend, MessageMetadata

log = logging.getLogger(__name__)

ALREADY_STORED = Position(-1, -1)
"""The message id a duplicate's receipt carries, as Pulsar answers it."""
REPLAY_BATCH = 100


class SequenceInFlight(StorageError):
    """The message's sequence id is still being written (Pulsar's
    MessageDupUnknownException, answered with PersistenceError)."""


@dataclass(frozen=True)
class Sequence:
    producer: str
    lowest: int
    highest: int


def recorded_sequence(metadata: MessageMetadata) -> Sequence | None:
    """What a stored entry says for deduplication; None for a marker or for a chunk that
    does not end its message."""
    if metadata.HasField("marker_type"):
        return None
    if metadata.HasField("chunk_id") and metadata.chunk_id != metadata.num_chunks_from_msg - 1:
        return None
    return Sequence(metadata.producer_name, metadata.sequence_id,
                    max(metadata.highest_sequence_id, metadata.sequence_id))


def sent_sequence(producer_name: str, send: CommandSend, entry: bytes) -> Sequence | None:
    """What a SEND counts as; the metadata is read only when the command does not say it."""
    replicated = producer_name.startswith(REPLICATOR_PREFIX)
    if not (send.is_chunk or send.marker or replicated):
        return Sequence(producer_name, send.sequence_id,
                        max(send.highest_sequence_id, send.sequence_id))
    found = recorded_sequence(split_entry(entry)[0])
    if found is None or replicated:
        return found
    return replace(found, producer=producer_name)


class MessageDeduplication:
    def __init__(self, topic: TopicName, ledger: ManagedLedger, policy: DeduplicationPolicy,
                 mutants: Mutants) -> None:
        self._topic = topic
        self._ledger = ledger
        self._policy = policy
        self._mutants = mutants
        self._cursor: ManagedCursor | None = None
        """The snapshot's cursor; None while deduplication is off."""
        self._pushed: dict[str, int] = {}
        self._persisted: dict[str, int] = {}
        self._in_flight = 0
        self._write_failed = False
        self._since_snapshot = 0
        self._last_written: Position | None = None
        self._snapshotting = False
        self._switching = asyncio.Lock()
        self._watches: list[Watch] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        self._ready = asyncio.ensure_future(self._start())

    @property
    def enabled(self) -> bool:
        return self._cursor is not None

    def last_sequence_id(self, producer_name: str) -> int:
        """What PRODUCER_SUCCESS tells a producer of this name to continue after (Pulsar's
        `getLastPublishedSequenceId`): -1 when nothing is known."""
        return self._pushed.get(producer_name, -1)

    # --- lifecycle ---------------------------------------------------------------------

    async def ready(self) -> None:
        """Return once the state is rebuilt (or deduplication is off). Raises when that
        failed; the next call tries again."""
        try:
            await asyncio.shield(self._ready)
        except asyncio.CancelledError:
            if not self._ready.cancelled():
                raise  # our caller was cancelled, not the start-up
        except Exception:
            if not self._closed:
                self._ready = asyncio.ensure_future(self._start())
            raise

    async def close(self) -> None:
        self._closed = True
        self._ready.cancel()
        for watch in self._watches:
            watch.cancel()
        for task in list(self._tasks):
            task.cancel()

    async def _start(self) -> None:
        await self._switch()
        if not self._closed and not self._watches:
            self._watches = self._policy.watch(self._topic, self._policy_changed)

    def _policy_changed(self) -> None:
        if not self._closed:
            self._spawn(self._switch_logged())

    async def _switch_logged(self) -> None:
        try:
            await self._switch()
        except Exception as exc:
            log.warning("%s: deduplication not switched after a policy change: %r",
                        self._topic, exc)

    async def _switch(self) -> None:
        """Turn deduplication on or off as the policies now say."""
        async with self._switching:
            wanted = await self._policy.enabled(self._topic)
            if wanted and self._cursor is None:
                cursor = await self._ledger.open_cursor(DEDUPLICATION_CURSOR,
                                                        InitialPosition.LATEST)
                await self._recover(cursor)
            elif not wanted and (self._cursor is not None
                                 or DEDUPLICATION_CURSOR in self._ledger.cursors()):
                self._cursor = None
                self._pushed, self._persisted = {}, {}
                await self._ledger.delete_cursor(DEDUPLICATION_CURSOR)
                log.info("%s: deduplication off", self._topic)

    async def _recover(self, cursor: ManagedCursor) -> None:
        """The map from the snapshot, then every entry after it."""
        recovered: dict[str, int] = {}
        replayed = 0
        if not self._mutants.on("dedup-state-lost-on-owner-change"):
            recovered = dict(cursor.properties)
            cursor.rewind()
            while entries := await cursor.read_entries(REPLAY_BATCH):
                for entry in entries:
                    try:
                        sequence = recorded_sequence(split_entry(entry.data)[0])
                    except MalformedFrame as exc:  # written past the broker's checks
                        log.warning("%s: entry %s records no sequence: %s", self._topic,
                                    entry.position, exc)
                        continue
                    if sequence is not None:
                        recovered[sequence.producer] = max(recovered.get(sequence.producer, -1),
                                                           sequence.highest)
                replayed += len(entries)
                self._last_written = entries[-1].position
        # No await from the last (empty) read on: nothing is written in between.
        self._pushed, self._persisted = recovered, dict(recovered)
        self._since_snapshot = replayed
        self._cursor = cursor
        log.info("%s: deduplication on: %d producers known, %d entries replayed",
                 self._topic, len(recovered), replayed)
        self._snapshot_if_due()

    # --- writing -----------------------------------------------------------------------

    async def publish(self, producer_name: str, send: CommandSend, entry: bytes,
                      append: Callable[[], Awaitable[Position]]) -> Position:
        """Write the entry through `append` unless it is a duplicate (then
        `ALREADY_STORED`, nothing written). Decides before its first await, so SENDs are
        judged in the order they were started. Raises `SequenceInFlight`."""
        sequence = sent_sequence(producer_name, send, entry) if self.enabled else None
        if sequence is not None:
            pushed = self._pushed.get(sequence.producer)
            if pushed is not None and sequence.lowest <= pushed:
                if sequence.lowest <= self._persisted.get(sequence.producer, -1):
                    return ALREADY_STORED
                raise SequenceInFlight(f"{self._topic}: sequence id {sequence.lowest} of "
                                       f"{sequence.producer} is still being written")
            self._pushed[sequence.producer] = sequence.highest
        self._in_flight += 1
        try:
            position = await append()
            self._written(sequence, position)
            return position
        except BaseException:
            self._write_failed = True
            raise
        finally:
            self._in_flight -= 1
            self._settled()

    def _written(self, sequence: Sequence | None, position: Position) -> None:
        if self._cursor is None:
            return
        if sequence is not None:
            self._persisted[sequence.producer] = max(
                self._persisted.get(sequence.producer, -1), sequence.highest)
        self._since_snapshot += 1
        self._last_written = max(position, self._last_written or position)

    def _settled(self) -> None:
        """Once nothing is in flight: after a failed write, what was pushed but never
        written is forgotten (its resend must be taken, as Pulsar resets the pushed map
        when it un-fences a topic); and a due snapshot is taken."""
        if self._in_flight:
            return
        if self._write_failed:
            self._write_failed = False
            self._pushed = dict(self._persisted)
        self._snapshot_if_due()

    def _snapshot_if_due(self) -> None:
        if (self._cursor is not None and self._in_flight == 0 and not self._snapshotting
                and self._last_written is not None
                and self._since_snapshot >= self._policy.snapshot_interval):
            self._since_snapshot = 0
            self._snapshotting = True
            self._spawn(self._snapshot(self._cursor, self._last_written, dict(self._persisted)))

    async def _snapshot(self, cursor: ManagedCursor, position: Position,
                        sequences: dict[str, int]) -> None:
        try:
            await cursor.mark_delete(position, sequences)
        except Exception as exc:
            log.warning("%s: deduplication snapshot at %s not stored: %r", self._topic,
                        position, exc)
        finally:
            self._snapshotting = False

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
