"""The schema registry's metadata in memory, for the in-process broker (the ZooKeeper one
is tested in tests/cluster/test_schemas.py)."""

from __future__ import annotations

import threading

from impl.broker.schemas.compatibility import Strategy
from impl.broker.schemas.registry import Change, StoredSchema
from impl.naming.topic_name import NamespaceName, TopicName


class MemorySchemas:
    def __init__(self) -> None:
        self.stored: dict[TopicName, list[StoredSchema]] = {}
        self.strategies: dict[NamespaceName, Strategy] = {}
        self._lock = threading.Lock()  # the registry calls in from worker threads

    def versions(self, topic: TopicName) -> list[StoredSchema]:
        with self._lock:
            return list(self.stored.get(topic, []))

    def update(self, topic: TopicName, change: Change) -> None:
        with self._lock:
            self.stored[topic] = change(list(self.stored.get(topic, [])))

    def strategy(self, namespace: NamespaceName) -> Strategy:
        return self.strategies.get(namespace, Strategy.UNDEFINED)
