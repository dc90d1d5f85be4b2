"""An entry on its way to consumers: the stored bytes plus what dispatch decisions need
(how many messages it holds for permits, its key for Key_Shared, the time before which it
must not be delivered), parsed once."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from impl.storage.api import Entry, Position
from wire.frames import check_entry, split_batch, split_entry
from wire.pulsar_api_pb2 import CompressionType, MessageMetadata, SingleMessageMetadata


@dataclass
class DispatchEntry:
    position: Position
    data: bytes
    num_messages: int
    deliver_at: int | None
    """`deliver_at_time` (ms since the epoch) of a delayed message, else None."""

    @classmethod
    def of(cls, entry: Entry, *, checked: bool = False) -> DispatchEntry:
        """`entry` for dispatch, its metadata parsed once. `checked`: first held to what
        the official client can decode (`check_entry`, which raises `BadEntry`), for an
        entry read from storage that no SEND of this broker's may have written."""
        metadata = check_entry(entry.data) if checked else split_entry(entry.data)[0]
        return cls(entry.position, entry.data,
                   (metadata.num_messages_in_batch
                    if metadata.HasField("num_messages_in_batch") else 1),
                   metadata.deliver_at_time if metadata.HasField("deliver_at_time") else None)

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
