"""Domain errors become HTTP statuses here, at the edge, with Pulsar's `{"reason": ...}`
body (the shape Pulsar's admin client reads its error message from)."""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from impl.broker.errors import ConsumerBusy, IncompatibleSchema, InvalidSchema, TopicClosing
from impl.metadata.ephemeral import StaleNodeRemains
from impl.metadata.errors import MetadataError
from impl.naming.entity_names import InvalidName
from impl.ownership.namespace_service import NoBrokerAvailable, NotOwner
from impl.partitioned_topics import InvalidPartitionCount, PartitionsNotGrown
from impl.resources import (
    InvalidResource,
    ResourceExists,
    ResourceInUse,
    ResourceNotFound,
)
from impl.storage.api import StorageError, TopicTerminated
from wire.topic_names import InvalidTopicName

log = logging.getLogger(__name__)

# Most specific first: the first matching class decides.
STATUS: list[tuple[type[BaseException], int]] = [
    (ResourceNotFound, 404),
    (ResourceExists, 409),
    (ResourceInUse, 409),
    (PartitionsNotGrown, 409),
    (InvalidPartitionCount, 406),  # as Pulsar answers a count it cannot take
    (InvalidResource, 412),
    (InvalidTopicName, 412),
    (InvalidName, 412),  # as Pulsar answers a name its NamedEntity refuses
    (TopicTerminated, 409),
    (InvalidSchema, 422),  # a schema definition that does not parse
    (IncompatibleSchema, 409),
    (ConsumerBusy, 412),  # a subscription with connected consumers, as Pulsar answers
    (TopicClosing, 503),
    (NotOwner, 503),
    (StaleNodeRemains, 503),
    (NoBrokerAvailable, 503),
    (MetadataError, 503),
    (StorageError, 500),
    (ValueError, 400),
]


def error_response(status: int, reason: str) -> web.Response:
    return web.json_response({"reason": reason}, status=status)


def status_of(exc: BaseException) -> int | None:
    return next((status for kind, status in STATUS if isinstance(exc, kind)), None)


@web.middleware
async def errors_middleware(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status >= 400 and exc.content_type != "application/json":
            return error_response(exc.status, exc.reason)
        raise
    except json.JSONDecodeError as exc:
        return error_response(400, f"request body is not JSON: {exc}")
    except Exception as exc:
        status = status_of(exc)
        if status is None:
            log.exception("admin request %s %s failed", request.method, request.path)
            return error_response(500, f"{type(exc).__name__}: {exc}")
        return error_response(status, str(exc))
