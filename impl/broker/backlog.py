"""What the admin API does to a subscription's backlog: peek at it, skip part or all of
it, expire what is too old, reset it to a publish time (a
reset to a message id is `Subscription.reset` itself).

Each acts on the `Subscription` that serves the topic's consumers, so they see the change
as they would see the protocol's own: a reset disconnects them and redelivers from the new
position (as SEEK does); skipping and expiry move the cursor's mark-delete, as Pulsar's do,
and what consumers already hold stays with them.
"""

from __future__ import annotations

import time
from collections import deque
from itertools import islice, takewhile

from impl.broker.subscription import Subscription
from impl.broker.topic import Topic
from impl.storage.api import Entry


def _require_count(value: int, what: str, least: int) -> None:
    if value < least:
        raise ValueError(f"{what} must be at least {least}, not {value}")


async def peek(topic: Topic, subscription: Subscription, n: int) -> Entry | None:
    """The n-th unacknowledged entry (1 is the first), left unacknowledged; None past
    the end of the backlog."""
    _require_count(n, "the message position", 1)
    position = next(islice(subscription.cursor.unacknowledged(), n - 1, None), None)
    if position is None:
        return None
    (entry,) = await topic.ledger.read([position])
    return entry


async def skip(subscription: Subscription, count: int) -> None:
    """Acknowledge the next `count` unacknowledged entries unread (Pulsar counts entries,
    so a batch is one)."""
    _require_count(count, "the number of messages to skip", 0)
    skipped = deque(islice(subscription.cursor.unacknowledged(), count), maxlen=1)
    if skipped:
        await subscription.skip_through(skipped[0])


async def skip_all(topic: Topic, subscription: Subscription) -> None:
    """Clear the backlog: everything written so far counts as acknowledged."""
    last = topic.ledger.last_confirmed
    if last is not None:
        await subscription.skip_through(last)


async def expire(topic: Topic, subscription: Subscription, seconds: int) -> None:
    """Acknowledge every unacknowledged entry published more than `seconds` ago (Pulsar's
    expiry: publish time plus the time to live lies in the past)."""
    _require_count(seconds, "the expiry time in seconds", 0)
    first_live = await topic.first_published_at_or_after(int(time.time() * 1000) - seconds * 1000)
    expired = deque(takewhile(lambda p: p < first_live, subscription.cursor.unacknowledged()),
                    maxlen=1)
    if expired:
        await subscription.skip_through(expired[0])


async def reset_to_time(topic: Topic, subscription: Subscription, timestamp_ms: int) -> None:
    """Deliver again from the first message published at or after `timestamp_ms`, as SEEK to
    a publish time does (past the last one: from the next message written)."""
    await subscription.reset(await topic.first_published_at_or_after(timestamp_ms))
