"""What a `StreamConsumer` tells about its session with the controller, for whoever records
it: each registration attempt and how it ended, each assignment the controller pushed,
and the unregistration at close. The harness writes them into the history, where
`reassigned` judges PIP-468's promise that a session outlives its connection; the client
itself needs none of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Assignment:
    """The segments the controller gave a consumer, and the layout epoch it said it
    computed them from (None when the answer carried none)."""

    epoch: int | None
    segments: tuple[int, ...]


class SessionEvents(Protocol):
    def registering(self) -> None:
        """A registration request is about to be sent."""

    def registered(self, assignment: Assignment | None, error: str | None,
                   refused: bool = False) -> None:
        """That request was answered with `assignment`, or failed with `error` (the
        exception's name): exactly one of the two is set. `refused`: the broker answered
        that it did not register the consumer (it does not lead the controller), where
        other failures leave that unknown."""

    def pushed(self, assignment: Assignment) -> None:
        """The controller changed the assignment unasked."""

    def unregistering(self) -> None: ...

    def unregistered(self, error: str | None) -> None:
        """The unregistration was answered (`error` None) or failed."""


class Unrecorded:
    """Session events nobody records."""

    def registering(self) -> None:
        pass

    def registered(self, assignment: Assignment | None, error: str | None,
                   refused: bool = False) -> None:
        pass

    def pushed(self, assignment: Assignment) -> None:
        pass

    def unregistering(self) -> None:
        pass

    def unregistered(self, error: str | None) -> None:
        pass
