"""The topics this broker serves to clients (Pulsar's `BrokerService`): a `Topic` per loaded
managed ledger, created on a client's first PRODUCER or SUBSCRIBE, dropped when the
namespace service unloads it.

The front end reaches ownership only through `TopicOwnership`, which
`impl.ownership.namespace_service.NamespaceService` fulfils; unit tests give a one-broker
stand-in.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any, Protocol

from impl.broker.dedup_policy import NO_DEDUPLICATION, DeduplicationPolicy
from impl.broker.non_persistent import NonPersistentTopic
from impl.broker.schemas.registry import SchemaRegistry
from impl.broker.topic import Topic
from impl.mutants import NONE, Mutants
from impl.naming.topic_name import NON_PERSISTENT, NamespaceName, TopicName
from impl.ownership.namespace_service import LookupResult, TopicCloser
from impl.replication.broker_hooks import NO_REPLICATION, ReplicationService
from impl.scalable.service import ScalableTopicService
from impl.storage.api import ManagedLedger
from wire.pulsar_api_pb2 import CommandGetTopicsOfNamespace

log = logging.getLogger(__name__)


class TopicOwnership(Protocol):
    async def lookup(self, topic: TopicName, authoritative: bool = False) -> LookupResult: ...

    async def load_topic(self, topic: TopicName) -> ManagedLedger: ...

    async def serve_without_ledger(self, topic: TopicName) -> None: ...

    async def partitions(self, topic: TopicName) -> int: ...

    async def persistent_topics(self, namespace: NamespaceName) -> list[str]: ...

    async def topic_lost(self, topic: TopicName) -> None: ...

    async def unload_topic(self, topic: TopicName) -> None: ...

    def set_topic_closer(self, close_clients: TopicCloser) -> None: ...


class BrokerService:
    def __init__(self, ownership: TopicOwnership, name_prefix: str, schemas: SchemaRegistry,
                 replication: ReplicationService = NO_REPLICATION,
                 mutants: Mutants = NONE,
                 deduplication: DeduplicationPolicy = NO_DEDUPLICATION) -> None:
        self.ownership = ownership
        self.schemas = schemas
        self.mutants = mutants
        self._replication = replication
        self._deduplication = deduplication
        self._topics: dict[TopicName, Topic] = {}
        self._names = (f"{name_prefix}-{n}" for n in itertools.count())
        self._losing: set[TopicName] = set()
        self._background: set[asyncio.Task[None]] = set()
        self.scalable: ScalableTopicService | None = None
        """PIP-468 scalable topics (impl/broker/scalable_commands.py); set by the process."""
        ownership.set_topic_closer(self.close_topic)

    def producer_name(self) -> str:
        """A name for a producer whose client chose none (unique on this broker)."""
        return next(self._names)

    async def topic(self, name: TopicName) -> Topic:
        """The loaded topic; loads it (opening its ledger, which fences any previous
        owner) if its bundle is ours, else raises `NotOwner`. A non-persistent topic opens
        no ledger (impl/broker/non_persistent.py)."""
        if name.domain == NON_PERSISTENT:
            return await self._non_persistent(name)
        ledger = await self.ownership.load_topic(name)
        topic = self._topics.get(name)
        if topic is None or topic.ledger is not ledger or topic.closing:
            topic = Topic(name, ledger, self._fenced, self._replication.for_topic(name, ledger),
                          self.mutants, self._deduplication)
            self._topics[name] = topic
        await topic.replication.ready()  # replicator cursors exist before the first write
        await topic.deduplication.ready()  # the sequence ids are known before any producer
        return topic

    async def _non_persistent(self, name: TopicName) -> Topic:
        await self.ownership.serve_without_ledger(name)
        topic = self._topics.get(name)
        if topic is None or topic.closing:
            topic = NonPersistentTopic(name, self.mutants)
            self._topics[name] = topic
        return topic

    async def partitions(self, name: TopicName) -> int:
        """What PARTITIONED_METADATA answers: the stored count, 0 for a topic that is not
        partitioned (which the client then uses as one topic)."""
        if self.mutants.on("partition-count-not-reported"):
            return 0
        return await self.ownership.partitions(name)

    async def topics_of(self, namespace: NamespaceName, mode: int) -> list[str]:
        """The namespace's topics for GET_TOPICS_OF_NAMESPACE: persistent ones (every
        partition among them) from the metadata store, non-persistent ones as loaded on
        this broker (they exist only while served; Pulsar asks every bundle's owner)."""
        persistent = ([] if mode == CommandGetTopicsOfNamespace.NON_PERSISTENT
                      else await self.ownership.persistent_topics(namespace))
        volatile = ([] if mode == CommandGetTopicsOfNamespace.PERSISTENT
                    else [str(name) for name, topic in self._topics.items()
                          if name.domain == NON_PERSISTENT and name.namespace_name == namespace
                          and not topic.closing])
        return persistent + volatile

    async def close_topic(self, name: TopicName) -> None:
        """The namespace service's `TopicCloser`: clients of `name` must look it up again."""
        topic = self._topics.pop(name, None)
        if topic is not None:
            await topic.close()

    async def close(self) -> None:
        """Close every topic's clients (the last step of a shutdown, after the bundles
        were unloaded; anything left is closed here)."""
        for name in list(self._topics):
            await self.close_topic(name)

    def _fenced(self, name: TopicName) -> None:
        """A write on `name` found its ledger fenced: another broker owns it now. Unload
        its bundle once, in the background (the producer that noticed has been closed)."""
        if name in self._losing:
            return
        self._losing.add(name)

        async def lose() -> None:
            try:
                await self.ownership.topic_lost(name)
            except Exception as exc:
                # The bundle could not be given up (ZooKeeper out of reach, say): at least
                # drop the fenced ledger, so the topic is opened afresh when next used.
                log.warning("unloading the bundle of fenced topic %s failed (%s); "
                            "unloading the topic only", name, exc)
                try:
                    await self.ownership.unload_topic(name)
                except Exception:
                    log.exception("unloading fenced topic %s failed", name)
            finally:
                self._losing.discard(name)

        task = asyncio.create_task(lose())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def loaded_topics(self) -> list[Topic]:
        """The topics served here now (what `/metrics` reports on)."""
        return [topic for topic in self._topics.values() if not topic.closing]

    def client_stats(self, name: TopicName) -> dict[str, Any]:
        """The front end's part of `/stats` (publishers, subscriptions' consumers)."""
        topic = self._topics.get(name)
        return topic.stats() if topic is not None else {}
