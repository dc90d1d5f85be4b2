"""A topic's schema versions and the rules for adding one (Pulsar's `SchemaRegistryService`).

Versions are numbered 0, 1, 2... per topic and never reused: deleting a schema appends a
deletion marker, after which the topic has no schema and the next one registered starts a
new history (compatibility is not checked across the marker) with the next number. The
versions live in the metadata store (`SchemaMetadata`, zookeeper.py); every change is one
read-modify-write there, so two brokers (or a broker and the admin API) registering at
once cannot both take a number. Blocking metadata calls run in a thread.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from impl.broker.errors import IncompatibleSchema
from impl.broker.schemas.compatibility import SchemaData, Strategy, check, consumer_strategy
from impl.mutants import NONE, Mutants
from impl.naming.topic_name import NamespaceName, TopicName

VERSION_BYTES = 8


def version_bytes(version: int) -> bytes:
    """A version as the protocol carries it: Pulsar's 8-byte big-endian long."""
    return version.to_bytes(VERSION_BYTES, "big", signed=True)


def version_of(data: bytes) -> int:
    if len(data) != VERSION_BYTES:
        raise ValueError(f"a schema version is {VERSION_BYTES} bytes, not {len(data)}")
    return int.from_bytes(data, "big", signed=True)


@dataclass(frozen=True)
class StoredSchema:
    version: int
    schema: SchemaData | None
    """None: the deletion marker."""
    timestamp_ms: int


Change = Callable[[list[StoredSchema]], list[StoredSchema]]


class SchemaMetadata(Protocol):
    """What the registry keeps in the metadata store (blocking calls)."""

    def versions(self, topic: TopicName) -> list[StoredSchema]:
        """Every version ever stored, oldest first (markers included)."""
        ...

    def update(self, topic: TopicName, change: Change) -> None:
        """Replace the versions by `change(versions)` as one compare-and-set; `change` may
        run more than once and may refuse by raising."""
        ...

    def strategy(self, namespace: NamespaceName) -> Strategy:
        """The namespace's compatibility strategy (`ResourceNotFound` for a missing
        namespace)."""
        ...


def live(versions: list[StoredSchema]) -> list[StoredSchema]:
    """The versions after the last deletion marker: the topic's current history."""
    markers = [n for n, stored in enumerate(versions) if stored.schema is None]
    return versions[markers[-1] + 1:] if markers else versions


def _history(versions: list[StoredSchema]) -> list[SchemaData]:
    return [stored.schema for stored in live(versions) if stored.schema is not None]


def _appended(versions: list[StoredSchema], schema: SchemaData | None) -> list[StoredSchema]:
    number = versions[-1].version + 1 if versions else 0
    return [*versions, StoredSchema(number, schema, int(time.time() * 1000))]


def _existing(versions: list[StoredSchema], schema: SchemaData) -> StoredSchema | None:
    return next((stored for stored in live(versions)
                 if stored.schema is not None and stored.schema.same_as(schema)), None)


class SchemaRegistry:
    def __init__(self, metadata: SchemaMetadata, mutants: Mutants = NONE) -> None:
        self._metadata = metadata
        self._mutants = mutants

    async def strategy(self, namespace: NamespaceName) -> Strategy:
        return await asyncio.to_thread(self._metadata.strategy, namespace)

    async def history(self, topic: TopicName) -> list[StoredSchema]:
        """The topic's current versions, oldest first (none: it has no schema)."""
        return live(await asyncio.to_thread(self._metadata.versions, topic))

    async def get(self, topic: TopicName, version: int | None = None) -> StoredSchema | None:
        """The latest version, or the one numbered `version`; None when there is none (or
        it was deleted)."""
        current = await self.history(topic)
        if version is None:
            return current[-1] if current else None
        return next((stored for stored in current if stored.version == version), None)

    async def put_if_absent(self, topic: TopicName, schema: SchemaData) -> int:
        """The version of `schema` on `topic`: its existing one, or a new one once the
        namespace's strategy accepts it (else `IncompatibleSchema`)."""
        stored = await asyncio.to_thread(self._metadata.versions, topic)
        if (found := _existing(stored, schema)) is not None:
            return found.version
        strategy = await self.strategy(topic.namespace_name)
        registered: list[int] = []

        def add(versions: list[StoredSchema]) -> list[StoredSchema]:
            registered.clear()
            if (found := _existing(versions, schema)) is not None:
                registered.append(found.version)
                return versions
            if not self._mutants.on("schema-compatibility-unchecked"):
                check(_history(versions), schema, strategy)
            versions = _appended(versions, schema)
            registered.append(versions[-1].version)
            return versions

        await asyncio.to_thread(self._metadata.update, topic, add)
        return registered[0]

    async def compatible(self, topic: TopicName, schema: SchemaData) -> tuple[bool, Strategy]:
        """Whether `schema` would be accepted now, and under which strategy (the admin
        API's compatibility test)."""
        strategy = await self.strategy(topic.namespace_name)
        try:
            check([s.schema for s in await self.history(topic) if s.schema is not None],
                  schema, strategy)
        except IncompatibleSchema:
            return False, strategy
        return True, strategy

    async def check_consumer(self, topic: TopicName, schema: SchemaData) -> None:
        """A consumer's schema against a topic that has data or clients: there must be a
        schema to check it against, and it must read the latest (or every) version."""
        current = [s.schema for s in await self.history(topic) if s.schema is not None]
        if not current:
            raise IncompatibleSchema(f"topic {topic} has no schema to check the "
                                     "consumer's schema against")
        check(current, schema, consumer_strategy(await self.strategy(topic.namespace_name)))

    async def delete(self, topic: TopicName) -> int | None:
        """Append a deletion marker; its version, or None when there was no schema."""
        marked: list[int] = []

        def mark(versions: list[StoredSchema]) -> list[StoredSchema]:
            marked.clear()
            if not _history(versions):
                return versions
            versions = _appended(versions, None)
            marked.append(versions[-1].version)
            return versions

        await asyncio.to_thread(self._metadata.update, topic, mark)
        return marked[0] if marked else None
