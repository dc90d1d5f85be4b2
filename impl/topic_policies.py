"""Policies set on one topic (Pulsar's `TopicPolicies`): each one, when set, takes precedence
over its namespace's. Pulsar keeps them in a system topic of the namespace; we keep one
JSON node per topic in the metadata store (`paths.topic_policies`), in Pulsar's field
names, so any broker reads them and the topic's owner can watch them. All calls block on
ZooKeeper; asyncio callers run them in a thread.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from impl.metadata import paths
from impl.metadata.errors import AlreadyExists, NotFound
from impl.metadata.store import MetadataStore
from impl.naming.topic_name import TopicName


@dataclass(frozen=True)
class TopicPolicies:
    deduplication_enabled: bool | None = None

    @classmethod
    def from_json(cls, data: bytes) -> TopicPolicies:
        value = json.loads(data or b"{}")
        enabled = value.get("deduplicationEnabled") if isinstance(value, dict) else None
        return cls(None if enabled is None else bool(enabled))


def topic_policies_path(topic: TopicName) -> str:
    return paths.topic_policies(topic.tenant, topic.namespace, topic.local_name)


def read_topic_policies(store: MetadataStore, topic: TopicName) -> TopicPolicies:
    """The topic's policies; none set when it has no node."""
    try:
        return TopicPolicies.from_json(store.get(topic_policies_path(topic)).data)
    except NotFound:
        return TopicPolicies()


def set_topic_deduplication(store: MetadataStore, topic: TopicName,
                            enabled: bool | None) -> None:
    """None removes the topic's choice: its namespace's (or the broker's) applies."""
    path = topic_policies_path(topic)

    def change(data: bytes) -> bytes:
        policies = json.loads(data or b"{}")
        policies["deduplicationEnabled"] = enabled
        return json.dumps(policies, sort_keys=True).encode()

    try:
        store.create(path, change(b""))
    except AlreadyExists:
        store.update(path, change)


def delete_topic_policies(store: MetadataStore, topic: TopicName) -> None:
    """With the topic: a topic created again under its name starts with none (as Pulsar
    deletes a topic's policies with it)."""
    try:
        store.delete(topic_policies_path(topic))
    except NotFound:
        pass
