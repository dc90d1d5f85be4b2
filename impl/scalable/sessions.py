"""Consumer sessions of scalable-topic subscriptions (PIP-468 "ConsumerRegistration and
ConsumerAssignment", "Consumer Session Lifecycle"), as values and as their JSON.

The registration is the durable session: it is written under the subscription's path and
outlives connections and controller failovers. The connection itself (where to push
assignment updates) is an `AssignmentListener`, held in the leader's memory only.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

from impl.scalable.errors import InvalidMetadata
from impl.scalable.layout import HashRange


class SubscriptionType(Enum):
    """The consumer kinds the controller assigns segments to. QueueConsumers attach to every
    segment themselves and never reach the controller (PIP-468 "Consumer Assignment")."""

    STREAM = "STREAM"
    """Ordered: a child segment waits until its parents are drained (PIP-460)."""
    CHECKPOINT = "CHECKPOINT"
    """Connectors that track their own positions: active segments are assigned at once."""

    @property
    def ordered(self) -> bool:
        return self == SubscriptionType.STREAM


@dataclass(frozen=True)
class AssignedSegment:
    segment_id: int
    hash_range: HashRange
    underlying_topic_name: str

    def to_json(self) -> dict[str, Any]:
        return {"segmentId": self.segment_id, "hashRange": self.hash_range.to_metadata(),
                "underlyingTopicName": self.underlying_topic_name}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> AssignedSegment:
        return cls(int(value["segmentId"]), HashRange.from_metadata(value["hashRange"]),
                   str(value["underlyingTopicName"]))


@dataclass(frozen=True)
class ConsumerAssignment:
    """What one consumer reads, and the layout epoch it was computed from."""

    layout_epoch: int
    assigned_segments: tuple[AssignedSegment, ...] = ()

    @property
    def segment_ids(self) -> tuple[int, ...]:
        return tuple(s.segment_id for s in self.assigned_segments)

    def to_json(self) -> dict[str, Any]:
        return {"layoutEpoch": self.layout_epoch,
                "assignedSegments": [s.to_json() for s in self.assigned_segments]}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> ConsumerAssignment:
        return cls(int(value["layoutEpoch"]),
                   tuple(AssignedSegment.from_json(s) for s in value["assignedSegments"]))


@dataclass(frozen=True)
class ConsumerRegistration:
    """The persisted session. `consumer_id` is the protocol id of the connection that
    registered; a reconnect keeps the session under its new connection's id in memory."""

    consumer_name: str
    consumer_id: int
    assignment: ConsumerAssignment

    def to_bytes(self) -> bytes:
        return json.dumps({"consumerId": self.consumer_id, "consumerName": self.consumer_name,
                           "assignment": self.assignment.to_json()}).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> ConsumerRegistration:
        try:
            value = json.loads(data)
            return cls(str(value["consumerName"]), int(value["consumerId"]),
                       ConsumerAssignment.from_json(value["assignment"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidMetadata("consumer registration", f"{data[:200]!r}: {exc!r}") from None


@dataclass(frozen=True)
class SubscriptionMetadata:
    """PIP-468's `SubscriptionMetadata`: subscription-level configuration. The consumer
    registrations are its child nodes, not part of this document."""

    name: str
    type: SubscriptionType = SubscriptionType.STREAM
    properties: Mapping[str, str] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        return json.dumps({"subscription": self.name, "type": self.type.value,
                           "properties": dict(self.properties)}).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> SubscriptionMetadata:
        try:
            value = json.loads(data)
            return cls(str(value["subscription"]), SubscriptionType(value["type"]),
                       {str(k): str(v) for k, v in (value.get("properties") or {}).items()})
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidMetadata("subscription metadata", f"{data[:200]!r}: {exc!r}") from None


class AssignmentListener(Protocol):
    """A consumer's connection, as the coordinator pushes to it (PIP-468's `cnx`). The DAG
    session layer implements it over the binary protocol. Called with the coordinator's lock
    held: it must hand the assignment off, not block."""

    def assignment_changed(self, assignment: ConsumerAssignment) -> None: ...

    def controller_lost(self) -> None:
        """The controller this consumer registered with stopped leading (or closed). Its
        session stays in the store for the next leader, but nothing here pushes to it
        again: the consumer must register anew, with whichever broker leads. Without this
        a leader that loses its metadata session and wins the election back a moment
        later holds sessions nobody listens to, and a stream consumer that still thinks
        itself registered waits for assignments forever."""
