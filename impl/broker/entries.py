"""An entry on its way to consumers: the stored bytes plus what dispatch decisions need
(how many messages it holds for permits, its key for Key_Shared, the time before which it
must not be delivered), parsed once."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from impl.storage.api import Entry, Position
from wire.frames import split_batch, split_entry
from wire.pulsar_api_pb2 import CompressionType, MessageMetadata, SingleMessageMetadata


@dataclass
class DispatchEntry:
    position: Position
    data: bytes
    num_messages: int = field(init=False)
    deliver_at: int | None = field(init=False)
    """`deliver_at_time` (ms since the epoch) of a delayed message, else None."""

    def __post_init__(self) -> None:
        metadata, _ = split_entry(self.data)
        self.num_messages = (metadata.num_messages_in_batch
                             if metadata.HasField("num_messages_in_batch") else 1)
        self.deliver_at = (metadata.deliver_at_time if metadata.HasField("deliver_at_time")
                           else None)

    @classmethod
    def of(cls, entry: Entry) -> DispatchEntry:
        return cls(entry.position, entry.data)

    @cached_property
    def sticky_key(self) -> bytes:
        """The key Key_Shared routes by: the ordering key if any, else the partition key, of
        the first message (a batch is routed whole, as Pulsar routes it). A compressed batch
        is not opened here: its own metadata's key stands for it."""
        metadata, payload = split_entry(self.data)
        keyed: MessageMetadata | SingleMessageMetadata = metadata
        if metadata.compression == CompressionType.NONE:
            keyed = split_batch(metadata, payload)[0][0]
        if keyed.HasField("ordering_key"):
            return keyed.ordering_key
        return keyed.partition_key.encode() if keyed.HasField("partition_key") else b""
