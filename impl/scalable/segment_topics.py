"""What the controller needs from the topics that store segments, and nothing more.

In a broker these calls go through the Segments admin API to whichever broker owns each
`segment://` topic (PIP-468 "Segment Topic Management via Admin API"); tests bind them to
znodes. Every call is idempotent, because a new controller leader repeats the steps of an
interrupted split or merge: creating a topic that exists adds only the missing cursors,
terminating a terminated topic changes nothing, deleting a missing topic is fine.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from impl.storage.api import InitialPosition


class SegmentTopics(Protocol):
    def create(self, segment_topic: str, subscriptions: Iterable[str],
               position: InitialPosition = InitialPosition.EARLIEST) -> None:
        """Create the topic if missing, and a cursor at `position` for each subscription
        that has none yet (existing cursors keep their place)."""
        ...

    def terminate(self, segment_topic: str) -> None:
        """Seal the topic: every later write fails with TopicTerminated."""
        ...

    def subscriptions(self, segment_topic: str) -> set[str]:
        """Names of the topic's durable subscriptions (cursors)."""
        ...

    def delete(self, segment_topic: str) -> None:
        """Delete the topic, its cursors and its data; nothing if it does not exist."""
        ...


class SegmentDrainChecker(Protocol):
    """PIP-460 ordering: a sealed segment is drained for a subscription once that
    subscription has consumed (acknowledged) everything up to the termination point. Only
    then may an ordered subscription read the segment's children."""

    def is_drained(self, subscription: str, segment_topic: str) -> bool: ...
