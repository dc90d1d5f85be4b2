"""The commands the broker sends, built in one place so every reply carries the fields the
official client insists on (a CONNECTED without `server_version`, say, is dropped)."""

from __future__ import annotations

from collections.abc import Iterable

from impl.broker.namespace_topics import TopicList
from impl.storage.api import Position
from wire.frames import DEFAULT_MAX_MESSAGE_SIZE
from wire.pulsar_api_pb2 import (
    BaseCommand,
    CommandAckResponse,
    CommandActiveConsumerChange,
    CommandCloseConsumer,
    CommandCloseProducer,
    CommandConnected,
    CommandError,
    CommandGetLastMessageIdResponse,
    CommandGetOrCreateSchemaResponse,
    CommandGetSchemaResponse,
    CommandGetTopicsOfNamespaceResponse,
    CommandLookupTopicResponse,
    CommandMessage,
    CommandPartitionedTopicMetadataResponse,
    CommandProducerSuccess,
    CommandReachedEndOfTopic,
    CommandSendError,
    CommandSendReceipt,
    CommandSuccess,
    MessageIdData,
    Schema,
    ServerError,
)

SERVER_VERSION = "starquake-broker"
MAX_PROTOCOL_VERSION = 19
MAX_MESSAGE_SIZE = DEFAULT_MAX_MESSAGE_SIZE
SERVER_REQUEST_ID = 2**64 - 1
"""The request id of a close (or a refusal) the broker starts itself (Pulsar sends -1)."""
TLS_SCHEME = "pulsar+ssl://"


def connected(client_protocol_version: int) -> BaseCommand:
    return BaseCommand(type=BaseCommand.CONNECTED, connected=CommandConnected(
        server_version=SERVER_VERSION,
        protocol_version=min(client_protocol_version, MAX_PROTOCOL_VERSION),
        max_message_size=MAX_MESSAGE_SIZE))


def connect_refused(reason: str) -> BaseCommand:
    """The answer to a CONNECT whose credentials prove no role; the connection is closed
    after it, as Pulsar does."""
    return error(SERVER_REQUEST_ID, ServerError.AuthenticationError, reason)


def success(request_id: int) -> BaseCommand:
    return BaseCommand(type=BaseCommand.SUCCESS, success=CommandSuccess(request_id=request_id))


def error(request_id: int, code: ServerError, message: str) -> BaseCommand:
    return BaseCommand(type=BaseCommand.ERROR, error=CommandError(
        request_id=request_id, error=code, message=message))


def partitioned_metadata(request_id: int, partitions: int) -> BaseCommand:
    return BaseCommand(
        type=BaseCommand.PARTITIONED_METADATA_RESPONSE,
        partitionMetadataResponse=CommandPartitionedTopicMetadataResponse(
            request_id=request_id, partitions=partitions,
            response=CommandPartitionedTopicMetadataResponse.Success))


def partitioned_metadata_failed(request_id: int, code: ServerError,
                                message: str) -> BaseCommand:
    return BaseCommand(
        type=BaseCommand.PARTITIONED_METADATA_RESPONSE,
        partitionMetadataResponse=CommandPartitionedTopicMetadataResponse(
            request_id=request_id, response=CommandPartitionedTopicMetadataResponse.Failed,
            error=code, message=message))


def lookup_answer(request_id: int, broker_url: str, *, connect: bool,
                  authoritative: bool) -> BaseCommand:
    """A `pulsar+ssl://` URL goes in `brokerServiceUrlTls` too: the field a client that
    speaks TLS connects to."""
    kind = CommandLookupTopicResponse.Connect if connect else CommandLookupTopicResponse.Redirect
    answer = CommandLookupTopicResponse(request_id=request_id, response=kind,
                                        brokerServiceUrl=broker_url, authoritative=authoritative)
    if broker_url.startswith(TLS_SCHEME):
        answer.brokerServiceUrlTls = broker_url
    return BaseCommand(type=BaseCommand.LOOKUP_RESPONSE, lookupTopicResponse=answer)


def lookup_failed(request_id: int, code: ServerError, message: str) -> BaseCommand:
    return BaseCommand(type=BaseCommand.LOOKUP_RESPONSE, lookupTopicResponse=(
        CommandLookupTopicResponse(request_id=request_id,
                                   response=CommandLookupTopicResponse.Failed,
                                   error=code, message=message)))


def producer_success(request_id: int, producer_name: str, topic_epoch: int | None = None,
                     ready: bool = True, schema_version: bytes | None = None,
                     last_sequence_id: int = -1) -> BaseCommand:
    """`ready` False: a WaitForExclusive producer is queued, and a second PRODUCER_SUCCESS
    with the same request id follows once it holds the topic. An exclusive producer
    learns the topic epoch, which it sends back when it reconnects. A producer with a
    schema learns its version, which its messages then carry. `last_sequence_id`: what a
    new producer of that name continues numbering after (deduplication)."""
    success = CommandProducerSuccess(request_id=request_id, producer_name=producer_name,
                                     last_sequence_id=last_sequence_id, producer_ready=ready)
    if topic_epoch is not None:
        success.topic_epoch = topic_epoch
    if schema_version is not None:
        success.schema_version = schema_version
    return BaseCommand(type=BaseCommand.PRODUCER_SUCCESS, producer_success=success)


def message_id(position: Position) -> MessageIdData:
    """On the wire an entry id of -1 (nothing yet) is 2**64 - 1, as Pulsar writes it."""
    return MessageIdData(ledgerId=position.ledger_id % 2**64, entryId=position.entry_id % 2**64)


def send_receipt(producer_id: int, sequence_id: int, highest_sequence_id: int,
                 position: Position) -> BaseCommand:
    return BaseCommand(type=BaseCommand.SEND_RECEIPT, send_receipt=CommandSendReceipt(
        producer_id=producer_id, sequence_id=sequence_id,
        highest_sequence_id=highest_sequence_id, message_id=message_id(position)))


def send_error(producer_id: int, sequence_id: int, code: ServerError,
               message: str) -> BaseCommand:
    return BaseCommand(type=BaseCommand.SEND_ERROR, send_error=CommandSendError(
        producer_id=producer_id, sequence_id=sequence_id, error=code, message=message))


def close_producer(producer_id: int) -> BaseCommand:
    return BaseCommand(type=BaseCommand.CLOSE_PRODUCER, close_producer=CommandCloseProducer(
        producer_id=producer_id, request_id=SERVER_REQUEST_ID))


def close_consumer(consumer_id: int) -> BaseCommand:
    return BaseCommand(type=BaseCommand.CLOSE_CONSUMER, close_consumer=CommandCloseConsumer(
        consumer_id=consumer_id, request_id=SERVER_REQUEST_ID))


def message(consumer_id: int, position: Position, redelivery_count: int,
            ack_set: Iterable[int] = ()) -> BaseCommand:
    return BaseCommand(type=BaseCommand.MESSAGE, message=CommandMessage(
        consumer_id=consumer_id, message_id=message_id(position),
        redelivery_count=redelivery_count, ack_set=list(ack_set)))


def ack_response(consumer_id: int, request_id: int, code: ServerError | None = None,
                 text: str = "") -> BaseCommand:
    response = CommandAckResponse(consumer_id=consumer_id, request_id=request_id)
    if code is not None:
        response.error = code
        response.message = text
    return BaseCommand(type=BaseCommand.ACK_RESPONSE, ackResponse=response)


def active_consumer_change(consumer_id: int, is_active: bool) -> BaseCommand:
    return BaseCommand(type=BaseCommand.ACTIVE_CONSUMER_CHANGE,
                       active_consumer_change=CommandActiveConsumerChange(
                           consumer_id=consumer_id, is_active=is_active))


def reached_end_of_topic(consumer_id: int) -> BaseCommand:
    return BaseCommand(type=BaseCommand.REACHED_END_OF_TOPIC,
                       reachedEndOfTopic=CommandReachedEndOfTopic(consumer_id=consumer_id))


def last_message_id(request_id: int, last: Position, batch_index: int,
                    mark_delete: Position) -> BaseCommand:
    """`batch_index` -1: the last entry is no batch, and the id names the entry whole."""
    last_id = message_id(last)
    if batch_index >= 0:
        last_id.batch_index = batch_index
    return BaseCommand(type=BaseCommand.GET_LAST_MESSAGE_ID_RESPONSE,
                       getLastMessageIdResponse=CommandGetLastMessageIdResponse(
                           request_id=request_id, last_message_id=last_id,
                           consumer_mark_delete_position=message_id(mark_delete)))


def schema(request_id: int, found: Schema, version: bytes) -> BaseCommand:
    return BaseCommand(type=BaseCommand.GET_SCHEMA_RESPONSE, getSchemaResponse=(
        CommandGetSchemaResponse(request_id=request_id, schema=found, schema_version=version)))


def schema_failed(request_id: int, code: ServerError, message: str) -> BaseCommand:
    return BaseCommand(type=BaseCommand.GET_SCHEMA_RESPONSE, getSchemaResponse=(
        CommandGetSchemaResponse(request_id=request_id, error_code=code,
                                 error_message=message)))


def schema_version(request_id: int, version: bytes) -> BaseCommand:
    """GET_OR_CREATE_SCHEMA's answer; an empty version: the request declared no schema."""
    return BaseCommand(type=BaseCommand.GET_OR_CREATE_SCHEMA_RESPONSE,
                       getOrCreateSchemaResponse=CommandGetOrCreateSchemaResponse(
                           request_id=request_id, schema_version=version))


def schema_version_failed(request_id: int, code: ServerError, message: str) -> BaseCommand:
    return BaseCommand(type=BaseCommand.GET_OR_CREATE_SCHEMA_RESPONSE,
                       getOrCreateSchemaResponse=CommandGetOrCreateSchemaResponse(
                           request_id=request_id, error_code=code, error_message=message))


def topics_of_namespace(request_id: int, found: TopicList) -> BaseCommand:
    return BaseCommand(type=BaseCommand.GET_TOPICS_OF_NAMESPACE_RESPONSE,
                       getTopicsOfNamespaceResponse=CommandGetTopicsOfNamespaceResponse(
                           request_id=request_id, topics=found.topics,
                           filtered=found.filtered, topics_hash=found.topics_hash,
                           changed=found.changed))
