"""The schema registry's metadata in ZooKeeper: one znode per topic,
`/schemas/{tenant}/{ns}/{topic}`, holding every version as JSON (Pulsar keeps the schemas
themselves in BookKeeper and only their index there; ours are small enough for the znode),
and the namespace's strategy from its policies."""

from __future__ import annotations

import base64
import json
from typing import Any

from impl.broker.schemas.compatibility import SchemaData, Strategy
from impl.broker.schemas.registry import Change, StoredSchema
from impl.metadata import paths
from impl.metadata.errors import AlreadyExists, NotFound
from impl.naming.topic_name import NamespaceName, TopicName
from impl.resources import PulsarResources
from wire.pulsar_api_pb2 import Schema


def _to_json(stored: StoredSchema) -> dict[str, Any]:
    value: dict[str, Any] = {"version": stored.version, "timestamp": stored.timestamp_ms,
                             "deleted": stored.schema is None}
    if stored.schema is not None:
        value.update(type=Schema.Type.Name(stored.schema.type),
                     data=base64.b64encode(stored.schema.data).decode(),
                     properties=dict(stored.schema.properties))
    return value


def _from_json(value: dict[str, Any]) -> StoredSchema:
    schema = None
    if not value.get("deleted"):
        schema = SchemaData(Schema.Type.Value(value["type"]), base64.b64decode(value["data"]),
                            tuple(sorted(value.get("properties", {}).items())))
    return StoredSchema(int(value["version"]), schema, int(value["timestamp"]))


def _load(data: bytes) -> list[StoredSchema]:
    return [_from_json(v) for v in json.loads(data or b"{}").get("versions", [])]


def _dump(versions: list[StoredSchema]) -> bytes:
    return json.dumps({"versions": [_to_json(v) for v in versions]}, sort_keys=True).encode()


def _path(topic: TopicName) -> str:
    return paths.topic_schemas(topic.tenant, topic.namespace, topic.local_name)


class ZooKeeperSchemas:
    def __init__(self, resources: PulsarResources) -> None:
        self._resources = resources
        self._store = resources.store

    def versions(self, topic: TopicName) -> list[StoredSchema]:
        try:
            return _load(self._store.get(_path(topic)).data)
        except NotFound:
            return []

    def update(self, topic: TopicName, change: Change) -> None:
        path = _path(topic)
        try:
            self._store.create(path, _dump([]))
        except AlreadyExists:
            pass
        self._store.update(path, lambda data: _dump(change(_load(data))))

    def strategy(self, namespace: NamespaceName) -> Strategy:
        return Strategy.named(self._resources.policies(namespace).schema_compatibility_strategy)
