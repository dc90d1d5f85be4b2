"""Where geo-replication meets the broker front end: the few calls impl/broker makes, and
do-nothing versions for a broker without replication (the front end's unit tests).

The front end calls, and knows nothing else of replication:

- when it loads a topic: `service.for_topic(name, ledger)`, then `await hooks.ready()`
  before any client may write (replicator cursors must exist before the first entry);
- when it opens a subscription: `hooks.subscription_hooks(cursor)`, and after every
  SUBSCRIBE `await hooks.subscribed(cursor, replicate_subscription_state)`;
- per subscription: `await sub_hooks.admit(entries)` on what it read from the cursor,
  before dispatch (markers never reach consumers), and `sub_hooks.acknowledged()` after
  every acknowledgement (mark-delete may have moved);
- `hooks.add_stats(stats)` when it builds the topic's stats; `await hooks.close()` when
  the topic unloads.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from impl.naming.topic_name import TopicName
from impl.storage.api import Entry, ManagedCursor, ManagedLedger, Position

MarkDeleteMover = Callable[[Position], Awaitable[None]]


class SubscriptionHooks(Protocol):
    async def admit(self, entries: list[Entry]) -> list[Entry]:
        """The entries to dispatch, in order: markers (and, with our extension, messages
        another cluster acknowledged) are acknowledged here instead."""
        ...

    def acknowledged(self) -> None:
        """After an acknowledgement: never blocks, never raises."""
        ...

    def attach(self, move_mark_delete: MarkDeleteMover) -> None:
        """The front end's subscription, loaded: from now on replication moves the
        mark-delete only through it, so what the subscription holds at or below the new
        position (unacknowledged, or queued for redelivery) is dropped with it, as a
        cumulative acknowledgement would drop it."""
        ...


class TopicHooks(Protocol):
    async def ready(self) -> None:
        """Return once replication is set up as the namespace says (never raises)."""
        ...

    def subscription_hooks(self, cursor: ManagedCursor) -> SubscriptionHooks: ...

    async def subscribed(self, cursor: ManagedCursor, replicate_state: bool) -> None:
        """A SUBSCRIBE went through; `replicate_state` is its `replicate_subscription_state`."""
        ...

    def add_stats(self, stats: dict[str, Any]) -> None:
        """Add `replication` (per remote cluster) and replicated-subscription state."""
        ...

    async def close(self) -> None: ...


class ReplicationService(Protocol):
    def for_topic(self, name: TopicName, ledger: ManagedLedger) -> TopicHooks: ...


class _NoSubscriptionHooks:
    async def admit(self, entries: list[Entry]) -> list[Entry]:
        return entries

    def acknowledged(self) -> None:
        pass

    def attach(self, move_mark_delete: MarkDeleteMover) -> None:
        pass


NO_SUBSCRIPTION_HOOKS = _NoSubscriptionHooks()


class NoReplication:
    """A broker that replicates nothing: every hook does nothing."""

    async def ready(self) -> None:
        pass

    def subscription_hooks(self, cursor: ManagedCursor) -> SubscriptionHooks:
        return NO_SUBSCRIPTION_HOOKS

    async def subscribed(self, cursor: ManagedCursor, replicate_state: bool) -> None:
        pass

    def add_stats(self, stats: dict[str, Any]) -> None:
        pass

    async def close(self) -> None:
        pass

    def for_topic(self, name: TopicName, ledger: ManagedLedger) -> TopicHooks:
        return self


NO_REPLICATION = NoReplication()
