"""One producer on one connection: SEND in, SEND_RECEIPT out, in order.

Every SEND starts its append at once (the managed ledger keeps appends in call order), and
receipts go out in the order the sends came, each only after its entry is durable. When the
ledger was fenced by a newer owner (`OwnershipLost`) or failed otherwise, the producer is
closed (CLOSE_PRODUCER) and sends no receipt again: the client looks the topic up and
resends what was not receipted. A write that was not durably added never gets a receipt.
With deduplication on (impl/broker/deduplication.py), a duplicate's receipt (message id
-1:-1) also waits its turn, and a SEND whose earlier copy is still being written gets
SEND_ERROR without the producer being closed. So does a SEND whose entry fails its
checksum (ChecksumError) or whose metadata or batch does not parse (MetadataError): nothing
is stored that consumers could not be sent.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from impl.broker import commands
from impl.broker.deduplication import SequenceInFlight
from impl.broker.peer import Peer
from impl.mutants import NONE, Mutants
from impl.storage.api import OwnershipLost, Position, TopicTerminated
from wire.frames import BadEntry
from wire.pulsar_api_pb2 import CommandSend, ProducerAccessMode, ServerError

log = logging.getLogger(__name__)


class Producer:
    def __init__(self, peer: Peer, producer_id: int, name: str,
                 append: Callable[[CommandSend, bytes], Awaitable[Position]],
                 on_fenced: Callable[[], None],
                 access_mode: ProducerAccessMode = ProducerAccessMode.Shared,
                 topic_epoch: int | None = None, mutants: Mutants = NONE) -> None:
        self.peer = peer
        self.producer_id = producer_id
        self.name = name
        self.access_mode = access_mode
        self.topic_epoch = topic_epoch
        """The epoch the client brought back (a reconnecting exclusive producer), then
        the one it was granted (impl/broker/access.py)."""
        self.schema_version: bytes | None = None
        """The version of the schema it declared, which its messages carry."""
        self._append = append
        self._on_fenced = on_fenced
        self._last: asyncio.Future[None] | None = None
        self._newest_append: asyncio.Future[Position] | None = None
        """The append of the newest SEND, kept only under the mutant
        `receipt-names-latest-write`."""
        self._latest_write = mutants.on("receipt-names-latest-write")
        self.closed = False
        self.messages_in = 0

    def __repr__(self) -> str:
        return f"Producer({self.name!r}, id={self.producer_id}, {self.peer.address})"

    def send(self, send: CommandSend, entry: bytes | BadEntry) -> asyncio.Future[None] | None:
        """Append `entry`, or refuse it when the frame codec found it unfit to store; the
        answer waits for those of earlier SENDs. Returns the future of that answer (None
        when the producer is closed and the SEND is dropped)."""
        if self.closed:
            return None  # closed by the broker; the client re-creates it and resends
        appended: asyncio.Future[Position]
        if isinstance(entry, BadEntry):
            appended = asyncio.get_running_loop().create_future()
            appended.set_exception(entry)
        else:
            appended = asyncio.ensure_future(self._append(send, entry))
        if self._latest_write:
            self._newest_append = appended
        self._last = asyncio.ensure_future(self._settle(send, appended, self._last))
        return self._last

    async def _settle(self, send: CommandSend, appended: asyncio.Future[Position],
                      previous: asyncio.Future[None] | None) -> None:
        try:
            position: Position | BaseException = await appended
            if self._newest_append is not None:
                # The producer's newest SEND, not this one, names the receipt's entry: the
                # same with one SEND in flight, another message's with several.
                position = await self._newest_append
        except Exception as exc:
            position = exc
        if previous is not None:
            await previous  # receipts leave in send order; _settle never raises
        if self.closed:
            return
        if isinstance(position, Position):
            self.messages_in += send.num_messages
            self.peer.send(commands.send_receipt(
                self.producer_id, send.sequence_id, send.highest_sequence_id, position))
        elif isinstance(position, TopicTerminated):
            self.peer.send(commands.send_error(self.producer_id, send.sequence_id,
                                               ServerError.TopicTerminatedError, str(position)))
        elif isinstance(position, BadEntry):
            # Nothing was written; the producer stays, as in Pulsar.
            log.warning("%s: write %d refused: %s", self, send.sequence_id, position)
            self.peer.send(commands.send_error(self.producer_id, send.sequence_id,
                                               position.error, str(position)))
        elif isinstance(position, SequenceInFlight):
            # The producer stays: the client answers SEND_ERROR by reconnecting.
            self.peer.send(commands.send_error(self.producer_id, send.sequence_id,
                                               ServerError.PersistenceError, str(position)))
        else:
            if isinstance(position, OwnershipLost):
                log.warning("%s: write %d refused, the topic was fenced by another owner",
                            self, send.sequence_id)
                self._on_fenced()
            else:
                log.error("%s: write %d failed: %r", self, send.sequence_id, position)
            self.close_by_broker()

    def close_by_broker(self) -> None:
        """The topic is leaving this broker (or its ledger failed): the client must look
        it up again and resend what has no receipt."""
        if not self.closed:
            self.closed = True
            self.peer.send(commands.close_producer(self.producer_id))

    def stats(self) -> dict[str, object]:
        return {"producerName": self.name, "producerId": self.producer_id,
                "accessMode": ProducerAccessMode.Name(self.access_mode),
                "address": self.peer.address, "msgInCounter": self.messages_in}
