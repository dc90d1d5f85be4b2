"""What the scalable-topic client raises besides the connection's errors
(`wire.errors`: `ClientError`, `ConnectionClosed`, `BrokerError`)."""

from __future__ import annotations

from wire.errors import ClientError


class SegmentTerminated(ClientError):
    """The segment was sealed by a split or merge: the send goes to its successor."""

    def __init__(self, segment_topic: str) -> None:
        super().__init__(f"{segment_topic} is terminated")
        self.segment_topic = segment_topic


class NotController(ClientError):
    """The broker asked to register a consumer does not lead the topic's controller."""

    def __init__(self, message: str, leader_url: str | None) -> None:
        super().__init__(message)
        self.leader_url = leader_url


class NoActiveSegment(ClientError):
    """The latest DAG has no active segment for a key's hash: the layout the brokers sent
    does not cover the hash space, so the client cannot route the send."""

    def __init__(self, epoch: int, hash_value: int) -> None:
        super().__init__(f"no active segment of layout epoch {epoch} holds hash "
                         f"{hash_value:#06x}")
        self.epoch = epoch
        self.hash_value = hash_value
