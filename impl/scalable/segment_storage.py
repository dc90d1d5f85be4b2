"""Segment topics on this broker's managed ledgers: what the Segments admin API does on the
broker that owns a segment's bundle (PIP-468 "Segment Topic Management via Admin API").

A segment topic (`segment://t/ns/name/0000-7fff-1`) is an ordinary managed ledger under
the `segment` domain, placed in bundles by the hash of its full name like any topic.
Every operation is idempotent, because a new controller leader repeats the steps of an
interrupted split or merge.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass

from impl.metadata.store import MetadataStore
from impl.naming.topic_name import TopicName
from impl.ownership.namespace_service import NamespaceService
from impl.resources import ResourceNotFound
from impl.storage.api import InitialPosition, ManagedLedger, Position
from impl.storage.factory import managed_ledger_name
from impl.storage.ledger_info import managed_ledger_path


class SegmentTopicNotFound(ResourceNotFound):
    """A 404 at the admin API, like any missing resource."""

    def __init__(self, topic: TopicName) -> None:
        super().__init__("segment topic", str(topic))
        self.topic = topic


@dataclass(frozen=True)
class CursorState:
    mark_delete_position: Position
    backlog: int


@dataclass(frozen=True)
class SegmentState:
    """What the controller asks of a segment: its cursors, and whether it is drained."""

    terminated: bool
    last_confirmed: Position | None
    cursors: dict[str, CursorState]

    def drained(self, subscription: str) -> bool:
        """PIP-460: sealed, and the subscription acknowledged everything up to the last
        entry. A subscription without a cursor here has nothing to read in it."""
        cursor = self.cursors.get(subscription)
        return self.terminated and (cursor is None or cursor.backlog == 0)

    def to_json(self) -> dict[str, object]:
        return {
            "terminated": self.terminated,
            "lastConfirmedEntry": str(self.last_confirmed) if self.last_confirmed else None,
            "subscriptions": {name: {"markDeletePosition": str(c.mark_delete_position),
                                     "msgBacklog": c.backlog,
                                     "drained": self.drained(name)}
                              for name, c in sorted(self.cursors.items())},
        }


class SegmentStorage:
    """Segment operations on the owner; callers have made sure this broker owns the bundle
    (the admin routes redirect to the owner otherwise)."""

    def __init__(self, store: MetadataStore, namespaces: NamespaceService) -> None:
        self._store = store
        self._namespaces = namespaces

    async def exists(self, topic: TopicName) -> bool:
        path = managed_ledger_path(managed_ledger_name(topic))
        return await asyncio.to_thread(self._store.exists, path)

    async def _existing(self, topic: TopicName) -> ManagedLedger:
        if not await self.exists(topic):
            raise SegmentTopicNotFound(topic)
        return await self._namespaces.load_topic(topic)

    async def create(self, topic: TopicName, subscriptions: Iterable[str],
                     position: InitialPosition) -> None:
        """Create the topic if missing and a cursor at `position` for each subscription
        that has none (existing cursors keep their place)."""
        ledger = await self._namespaces.load_topic(topic)
        for subscription in subscriptions:
            await ledger.open_cursor(subscription, position)

    async def terminate(self, topic: TopicName) -> Position | None:
        """Seal the ledger: producers' later sends fail with TopicTerminated, consumers get
        REACHED_END_OF_TOPIC once they have read everything."""
        return await (await self._existing(topic)).terminate()

    async def state(self, topic: TopicName) -> SegmentState:
        ledger = await self._existing(topic)
        cursors = {name: CursorState(c.mark_delete_position, c.backlog())
                   for name, c in ledger.cursors().items()}
        return SegmentState(ledger.terminated, ledger.last_confirmed, cursors)

    async def delete_subscription(self, topic: TopicName, subscription: str) -> None:
        if await self.exists(topic):
            await (await self._namespaces.load_topic(topic)).delete_cursor(subscription)

    async def delete(self, topic: TopicName) -> None:
        """Delete the topic, its cursors and data; nothing when it does not exist."""
        if await self.exists(topic):
            await self._namespaces.delete_topic(topic)
