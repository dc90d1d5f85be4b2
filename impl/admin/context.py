"""What the admin handlers reach: the broker's parts, behind one typed application key."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from impl.broker.schemas.registry import SchemaRegistry
from impl.broker.service import BrokerService
from impl.broker.topic import Topic
from impl.metadata.store import MetadataStore
from impl.naming.bundles import MAX_NAMESPACE_BUNDLES
from impl.naming.topic_name import TopicName
from impl.ownership.namespace_service import NamespaceService
from impl.resources import PulsarResources
from impl.scalable.segment_storage import SegmentStorage
from impl.scalable.service import ScalableTopicService


@dataclass
class AdminContext:
    cluster: str
    store: MetadataStore
    resources: PulsarResources
    namespaces: NamespaceService
    healthy: Callable[[], str | None]
    """None when the broker can serve; otherwise why not (the health check's answer)."""
    client_stats: Callable[[TopicName], dict[str, Any]] = lambda _topic: {}
    """The front end's part of a topic's stats (publishers, consumers, rates)."""
    scalable: ScalableTopicService | None = None
    """PIP-468 scalable topics (`/admin/v2/scalable`); None when disabled."""
    segments: SegmentStorage | None = None
    """Segment topics owned here (`/admin/v2/segments`); None when disabled."""
    broker: BrokerService | None = None
    """The protocol front end: subscription operations act on its topics, so that
    connected consumers see them; `/metrics` reads them. None: those paths answer 503."""
    schemas: SchemaRegistry | None = None
    """Topics' schemas (`/admin/v2/schemas`); None: those paths answer 503."""
    broker_deduplication: bool = False
    """The broker's `brokerDeduplicationEnabled`: deduplication where no policy says."""
    max_namespace_bundles: int = MAX_NAMESPACE_BUNDLES
    """Pulsar's `loadBalancerNamespaceMaximumBundles`: the most bundles a new namespace
    may ask for."""
    broker_client_token: str | None = None
    """What this broker presents on the admin requests it makes itself (a partitioned
    topic's partitions, asked of their owners), `--broker-client-token-file`; None:
    nothing, which brokers with authentication on refuse."""


CONTEXT: web.AppKey[AdminContext] = web.AppKey("starquake.admin.context", AdminContext)


def context(request: web.Request) -> AdminContext:
    return request.app[CONTEXT]


def front_end(request: web.Request) -> BrokerService:
    broker = context(request).broker
    if broker is None:
        raise web.HTTPServiceUnavailable(reason="this admin API has no protocol front end")
    return broker


async def served_topic(request: web.Request, name: TopicName) -> Topic:
    """The topic as the front end serves it (loaded here if it is not yet); the caller has
    made sure this broker owns it."""
    return await front_end(request).topic(name)


def schema_registry(request: web.Request) -> SchemaRegistry:
    schemas = context(request).schemas
    if schemas is None:
        raise web.HTTPServiceUnavailable(reason="this admin API has no schema registry")
    return schemas
