"""Partitioned topics as metadata (Pulsar's `PartitionedTopicResources`): a partitioned
topic is one znode holding its partition count; its partitions are ordinary persistent
topics named `<topic>-partition-<i>`, which brokers serve like any other.

As Pulsar does, creating or growing a partitioned topic also creates each new partition's
managed ledger node (empty: the first owner fills it in), so the namespace's topic list
names every partition from the start. Counts only grow. Calls block on ZooKeeper.
"""

from __future__ import annotations

import json

from impl.metadata import paths
from impl.metadata.errors import AlreadyExists, NotFound
from impl.metadata.store import MetadataStore
from impl.naming.topic_name import PARTITION_SUFFIX, NamespaceName, TopicName
from impl.resources import InvalidResource, ResourceError, ResourceExists, ResourceNotFound

MAX_PARTITIONS = 1000
"""The bound on a partitioned topic's partition count (Pulsar's
`maxNumPartitionsPerPartitionedTopic`, which is unbounded by default; a client opens a
producer and a consumer per partition, so a typo here would be costly)."""


class InvalidPartitionCount(ResourceError):
    """A count of zero or less, or above the bound (Pulsar answers 406)."""


class PartitionsNotGrown(ResourceError):
    """An update that does not add partitions (Pulsar answers 409)."""


def _path(topic: TopicName) -> str:
    return paths.partitioned_topic(topic.tenant, topic.namespace, topic.domain,
                                   topic.local_name)


def check_count(count: int) -> None:
    if count <= 0:
        raise InvalidPartitionCount("the number of partitions must be more than 0")
    if count > MAX_PARTITIONS:
        raise InvalidPartitionCount(
            f"the number of partitions must be at most {MAX_PARTITIONS}, not {count}")


class PartitionedTopicResources:
    def __init__(self, store: MetadataStore) -> None:
        self.store = store

    def partitions(self, topic: TopicName) -> int:
        """The partition count; 0 for a topic that is not partitioned (a partition among
        them: partitions are not partitioned themselves)."""
        if topic.partition_index is not None:
            return 0
        try:
            data = self.store.get(_path(topic)).data
        except NotFound:
            return 0
        return int(json.loads(data)["partitions"])

    def partitioned_topics(self, namespace: NamespaceName, domain: str) -> list[str]:
        """Full names of the namespace's partitioned topics (not their partitions)."""
        parent = paths.namespace_partitioned_topics(namespace.tenant, namespace.namespace,
                                                    domain)
        try:
            children = self.store.children(parent)
        except NotFound:
            return []
        return sorted(f"{domain}://{namespace}/{paths.decode(c)}" for c in children)

    def create(self, topic: TopicName, count: int) -> None:
        """`ResourceExists` when the name is taken by a partitioned topic or by a topic of
        its own (a managed ledger); names with `-partition-` are refused (412), as
        Pulsar refuses them."""
        check_count(count)
        if PARTITION_SUFFIX in topic.local_name:
            raise InvalidResource(
                f"a partitioned topic's name must not contain {PARTITION_SUFFIX!r}")
        if self.store.exists(paths.managed_ledger(topic.tenant, topic.namespace,
                                                  topic.local_name)):
            raise ResourceExists("topic", str(topic))
        try:
            self.store.create(_path(topic), _metadata(count))
        except AlreadyExists:
            raise ResourceExists("partitioned topic", str(topic)) from None
        self._create_partitions(topic, 0, count)

    def grow(self, topic: TopicName, count: int) -> None:
        """Raise the count (never lower it); the new partitions are created first, so
        that a client which sees the new count finds them."""
        check_count(count)
        current = self.partitions(topic)
        if current == 0:
            raise ResourceNotFound("partitioned topic", str(topic))
        if count <= current:
            raise PartitionsNotGrown(
                f"the number of partitions can only grow: {topic} has {current}, "
                f"asked for {count}")
        self._create_partitions(topic, current, count)

        def replace(data: bytes) -> bytes:
            if int(json.loads(data)["partitions"]) >= count:
                raise PartitionsNotGrown(f"{topic} grew meanwhile")
            return _metadata(count)
        self.store.update(_path(topic), replace)

    def delete(self, topic: TopicName) -> None:
        """Forget the metadata (the caller deleted the partitions first)."""
        try:
            self.store.delete(_path(topic))
        except NotFound:
            raise ResourceNotFound("partitioned topic", str(topic)) from None

    def _create_partitions(self, topic: TopicName, start: int, end: int) -> None:
        for index in range(start, end):
            partition = topic.partition(index)
            try:
                self.store.create(paths.managed_ledger(
                    partition.tenant, partition.namespace, partition.local_name))
            except AlreadyExists:
                pass


def _metadata(count: int) -> bytes:
    return json.dumps({"partitions": count}).encode()
