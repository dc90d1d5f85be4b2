"""Whether a topic deduplicates (Pulsar's `isDeduplicationEnabled`): the topic's own policy
when set, else its namespace's `deduplicationEnabled`, else the broker's
`brokerDeduplicationEnabled` (off unless the broker is started with it). The owner watches
both policies, so a change reaches a loaded topic without an unload.

The front end sees only `DeduplicationPolicy`: `MetadataDeduplication` answers from the
metadata store; `FixedDeduplication` gives every topic the same answer (the front end's
unit tests, which run without ZooKeeper).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from impl.metadata import paths
from impl.metadata.store import Node, Watch
from impl.naming.topic_name import TopicName
from impl.resources import PulsarResources
from impl.topic_policies import read_topic_policies, topic_policies_path

DEFAULT_SNAPSHOT_INTERVAL = 1000
"""Entries between two snapshots of a topic's sequence ids (Pulsar's
`brokerDeduplicationEntriesInterval`)."""


def applied_deduplication(resources: PulsarResources, topic: TopicName,
                          broker_default: bool) -> bool:
    """The setting in force for `topic` (blocks on ZooKeeper; also what the admin API's
    `?applied=true` answers)."""
    own = read_topic_policies(resources.store, topic).deduplication_enabled
    if own is not None:
        return own
    namespace = resources.policies(topic.namespace_name).deduplication_enabled
    return broker_default if namespace is None else namespace


class DeduplicationPolicy(Protocol):
    @property
    def snapshot_interval(self) -> int: ...

    async def enabled(self, topic: TopicName) -> bool: ...

    def watch(self, topic: TopicName, changed: Callable[[], None]) -> list[Watch]:
        """Call `changed` on the event loop whenever what `enabled` answers may have
        changed; cancel the watches when the topic unloads."""
        ...


@dataclass(frozen=True)
class FixedDeduplication:
    on: bool = False
    snapshot_interval: int = DEFAULT_SNAPSHOT_INTERVAL

    async def enabled(self, topic: TopicName) -> bool:
        return self.on

    def watch(self, topic: TopicName, changed: Callable[[], None]) -> list[Watch]:
        return []


NO_DEDUPLICATION = FixedDeduplication()


class MetadataDeduplication:
    def __init__(self, resources: PulsarResources, broker_default: bool = False,
                 snapshot_interval: int = DEFAULT_SNAPSHOT_INTERVAL) -> None:
        self._resources = resources
        self.broker_default = broker_default
        self.snapshot_interval = snapshot_interval

    async def enabled(self, topic: TopicName) -> bool:
        return await asyncio.to_thread(applied_deduplication, self._resources, topic,
                                       self.broker_default)

    def watch(self, topic: TopicName, changed: Callable[[], None]) -> list[Watch]:
        loop = asyncio.get_running_loop()

        def on_change(_node: Node | None) -> None:
            loop.call_soon_threadsafe(changed)

        namespace = paths.namespace_policies(topic.tenant, topic.namespace)
        store = self._resources.store
        return [store.watch_data(namespace, on_change),
                store.watch_data(topic_policies_path(topic), on_change)]
