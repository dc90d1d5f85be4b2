"""Where a segment stored a message, as the protocol names it to the client: the
`(ledgerId, entryId)` of a `MessageIdData`, written `ledger:entry` as in the history."""

from __future__ import annotations

from dataclasses import dataclass

from wire.pulsar_api_pb2 import MessageIdData


@dataclass(frozen=True, order=True)
class MessageId:
    ledger_id: int
    entry_id: int

    def __str__(self) -> str:
        return f"{self.ledger_id}:{self.entry_id}"

    @classmethod
    def of(cls, data: MessageIdData) -> MessageId:
        return cls(data.ledgerId, data.entryId)

    def to_data(self) -> MessageIdData:
        return MessageIdData(ledgerId=self.ledger_id, entryId=self.entry_id)
