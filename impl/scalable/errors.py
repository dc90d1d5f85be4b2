"""Domain errors of scalable topics, each carrying the fact a caller (or an admin API status
mapping) needs: which segment, which state, who leads."""

from __future__ import annotations


class ScalableTopicError(Exception):
    """Base of every scalable-topic error."""


class InvalidMetadata(ScalableTopicError):
    """A stored document that cannot be read; `what` names the kind of document."""

    def __init__(self, what: str, reason: str) -> None:
        super().__init__(f"invalid {what}: {reason}")
        self.what = what
        self.reason = reason


class InvalidLayout(InvalidMetadata):
    """Metadata that does not describe a valid segment DAG (bad JSON, a gap between
    ranges, a child that does not name its parent...)."""

    def __init__(self, reason: str) -> None:
        super().__init__("segment layout", reason)


class SegmentNotFound(ScalableTopicError):
    def __init__(self, segment_id: int) -> None:
        super().__init__(f"segment {segment_id} is not in the layout")
        self.segment_id = segment_id


class SegmentNotActive(ScalableTopicError):
    """Only ACTIVE segments can be split or merged."""

    def __init__(self, segment_id: int, state: str) -> None:
        super().__init__(f"segment {segment_id} is {state}, not ACTIVE")
        self.segment_id = segment_id
        self.state = state


class SegmentsNotAdjacent(ScalableTopicError):
    """A merge needs two ranges that touch: one ends right before the other starts."""

    def __init__(self, first: int, second: int, first_range: str, second_range: str) -> None:
        super().__init__(
            f"segments {first} {first_range} and {second} {second_range} are not adjacent")
        self.segment_ids = (first, second)


class SegmentTooSmall(ScalableTopicError):
    """A segment covering a single hash value has no midpoint to split at."""

    def __init__(self, segment_id: int, hash_range: str) -> None:
        super().__init__(f"segment {segment_id} {hash_range} covers one hash and cannot split")
        self.segment_id = segment_id


class SegmentNotPrunable(ScalableTopicError):
    def __init__(self, segment_id: int, reason: str) -> None:
        super().__init__(f"segment {segment_id} cannot be pruned: {reason}")
        self.segment_id = segment_id
        self.reason = reason


class HashOutOfRange(ScalableTopicError, ValueError):
    def __init__(self, value: int) -> None:
        super().__init__(f"hash {value} is outside [0x0000, 0xFFFF]")
        self.value = value


class ScalableTopicNotFound(ScalableTopicError):
    def __init__(self, topic: str) -> None:
        super().__init__(f"scalable topic {topic} does not exist")
        self.topic = topic


class ScalableTopicExists(ScalableTopicError):
    def __init__(self, topic: str) -> None:
        super().__init__(f"scalable topic {topic} already exists")
        self.topic = topic


class SubscriptionNotFound(ScalableTopicError):
    def __init__(self, topic: str, subscription: str) -> None:
        super().__init__(f"scalable topic {topic} has no subscription {subscription}")
        self.topic = topic
        self.subscription = subscription


class NotLeader(ScalableTopicError):
    """PIP-468 "Non-leader brokers": mutations are refused by any controller that does not
    lead; the message names the leader so a caller can redirect."""

    def __init__(self, topic: str, leader_url: str | None) -> None:
        who = f"the leader is {leader_url}" if leader_url else "no controller leads right now"
        super().__init__(f"this broker's controller for {topic} is not the leader; {who}")
        self.topic = topic
        self.leader_url = leader_url


class LeadershipLost(NotLeader):
    """Leadership went away in the middle of an operation. The operation may be half done;
    the next leader finds its pending change in the store and rolls it forward."""

    def __init__(self, topic: str, operation: str) -> None:
        super().__init__(topic, None)
        self.args = (f"the controller for {topic} lost leadership during {operation}; "
                     "the next leader rolls it forward",)
        self.operation = operation


class LayoutUpdateConflict(ScalableTopicError):
    """The layout compare-and-set kept losing to other writers."""

    def __init__(self, topic: str, attempts: int) -> None:
        super().__init__(f"layout of {topic} changed under {attempts} update attempts in a row")
        self.topic = topic
        self.attempts = attempts
