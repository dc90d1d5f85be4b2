"""A stored entry as Pulsar's admin API answers a peek: the payload as the body, the
metadata in `X-Pulsar-*` headers (the names Pulsar's admin client reads back).

The body is the payload as stored: a batch is the whole batch payload, as Pulsar sends it;
a compressed payload is not decompressed (Pulsar decompresses it), and
`X-Pulsar-compression` says so.
"""

from __future__ import annotations

from datetime import UTC, datetime

from aiohttp import web

from impl.storage.api import Entry
from wire.frames import split_entry
from wire.pulsar_api_pb2 import CompressionType, MessageMetadata


def _timestamp(millis: int) -> str:
    """Pulsar's header spelling of a time: ISO 8601 in UTC with milliseconds."""
    moment = datetime.fromtimestamp(millis / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{millis % 1000:03d}Z"


def _headers(metadata: MessageMetadata, payload_size: int) -> dict[str, str]:
    headers = {f"X-Pulsar-PROPERTY-{p.key}": p.value for p in metadata.properties}
    headers["X-Pulsar-publish-time"] = _timestamp(metadata.publish_time)
    if metadata.event_time:
        headers["X-Pulsar-event-time"] = _timestamp(metadata.event_time)
    if metadata.HasField("num_messages_in_batch"):
        headers["X-Pulsar-num-batch-message"] = str(metadata.num_messages_in_batch)
        headers["X-Pulsar-batch-size"] = str(payload_size)
    headers["X-Pulsar-Is-Encrypted"] = "false"
    headers["X-Pulsar-producer-name"] = metadata.producer_name
    headers["X-Pulsar-sequence-id"] = str(metadata.sequence_id)
    if metadata.HasField("replicated_from"):
        headers["X-Pulsar-replicated-from"] = metadata.replicated_from
    if metadata.HasField("partition_key"):
        headers["X-Pulsar-partition-key"] = metadata.partition_key
    if metadata.HasField("compression"):
        headers["X-Pulsar-compression"] = CompressionType.Name(metadata.compression)
    if metadata.HasField("uncompressed_size"):
        headers["X-Pulsar-uncompressed-size"] = str(metadata.uncompressed_size)
    if metadata.HasField("marker_type"):
        headers["X-Pulsar-marker-type"] = str(metadata.marker_type)
    return headers


def entry_response(entry: Entry) -> web.Response:
    metadata, payload = split_entry(entry.data)
    headers = _headers(metadata, len(payload))
    headers["X-Pulsar-Message-ID"] = str(entry.position)
    return web.Response(body=payload, headers=headers, content_type="application/octet-stream")
