"""What the scalable-topic client raises."""

from __future__ import annotations


class ClientError(Exception):
    """Base of the client's errors."""


class ConnectionClosed(ClientError):
    """The connection to a broker closed; what was in flight has an unknown outcome."""


class BrokerError(ClientError):
    """A broker refused a request; `code` is the protocol's `ServerError`."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"broker error {code}: {message}")
        self.code = code


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
