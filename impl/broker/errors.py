"""Why a request failed, as the protocol says it: every exception the front end meets maps
onto one `ServerError` here, at the edge, so the handlers raise domain errors only."""

from __future__ import annotations

from impl.metadata.ephemeral import StaleNodeRemains
from impl.metadata.errors import MetadataError
from impl.ownership.namespace_service import NoBrokerAvailable, NotOwner
from impl.resources import ResourceNotFound
from impl.security.errors import NotAuthenticated, NotAuthorized
from impl.storage.api import OwnershipLost, StorageError, TopicTerminated
from wire.pulsar_api_pb2 import ServerError
from wire.topic_names import InvalidTopicName


class BrokerRequestError(Exception):
    """A request the broker refuses for a reason the client can act on."""

    code: ServerError = ServerError.UnknownError


class ConsumerBusy(BrokerRequestError):
    """The subscription cannot take this consumer (exclusive and taken, or another type)."""

    code = ServerError.ConsumerBusy


class ProducerBusy(BrokerRequestError):
    """The producer's name is taken on the topic, or a Shared producer met an exclusive
    one (Pulsar's NamingException and ProducerBusyException)."""

    code = ServerError.ProducerBusy


class ProducerFenced(BrokerRequestError):
    """An exclusive producer cannot have the topic: another producer holds it, or a newer
    exclusive producer fenced this one out (PIP-68)."""

    code = ServerError.ProducerFenced


class IncompatibleSchema(BrokerRequestError):
    """A schema the topic's compatibility strategy does not let in (or a consumer's schema
    on a topic that has data but no schema to check it against)."""

    code = ServerError.IncompatibleSchema


class InvalidSchema(IncompatibleSchema):
    """A schema definition that does not parse; clients hear IncompatibleSchema, as from
    Pulsar, while the admin API tells the two apart (422, not 409)."""


class NoSchema(BrokerRequestError):
    """GET_SCHEMA of a topic without a schema, or of a version it does not have (Pulsar
    answers TopicNotFound)."""

    code = ServerError.TopicNotFound


class ConsumerNotFound(BrokerRequestError):
    code = ServerError.ConsumerNotFound

    def __init__(self, consumer_id: int) -> None:
        super().__init__(f"no consumer {consumer_id} on this connection")


class SeekRefused(BrokerRequestError):
    """A SEEK without a target, or for a consumer this connection does not have (Pulsar
    answers both with MetadataError)."""

    code = ServerError.MetadataError


class AckRefused(BrokerRequestError):
    """An acknowledgement of a message the topic does not hold: past its last entry, or a
    batch index or ack set beyond the stored batch. Nothing changes; a receipt asked for
    says why (Pulsar refuses a malformed request with NotAllowedError)."""

    code = ServerError.NotAllowedError


class TopicClosing(BrokerRequestError):
    """The topic is being unloaded here; the client must look it up again."""

    code = ServerError.ServiceNotReady

    def __init__(self, topic: object) -> None:
        super().__init__(f"topic {topic} is being unloaded from this broker")


# Most specific first: the first matching class decides.
# A BrokerRequestError carries its own code (`server_error` asks it first).
_CODES: list[tuple[type[BaseException], ServerError]] = [
    (NotAuthenticated, ServerError.AuthenticationError),
    (NotAuthorized, ServerError.AuthorizationError),
    (NotOwner, ServerError.ServiceNotReady),
    (StaleNodeRemains, ServerError.ServiceNotReady),
    (NoBrokerAvailable, ServerError.ServiceNotReady),
    (OwnershipLost, ServerError.ServiceNotReady),
    (MetadataError, ServerError.ServiceNotReady),
    (InvalidTopicName, ServerError.InvalidTopicName),
    (ResourceNotFound, ServerError.TopicNotFound),
    (TopicTerminated, ServerError.TopicTerminatedError),
    (StorageError, ServerError.PersistenceError),
]


def server_error(exc: BaseException) -> ServerError:
    """The `ServerError` a client should see for `exc` (UnknownError when unexpected)."""
    if isinstance(exc, BrokerRequestError):
        return exc.code
    return next((code for kind, code in _CODES if isinstance(exc, kind)), ServerError.UnknownError)
