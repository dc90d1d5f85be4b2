"""Stand-ins for what surrounds a coordinator in unit tests: a consumer connection that
records pushes, timers fired by hand, drain state in a set, sessions kept in a dict.
(Integration tests use the real controller and ZooKeeper instead.)"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from impl.scalable.sessions import ConsumerAssignment, ConsumerRegistration
from tests.fixtures.recording import Recorder


@dataclass
class RecordingConnection:
    """One consumer connection: every assignment pushed to it, in order."""

    name: str
    pushes: list[ConsumerAssignment] = field(default_factory=list)
    open: bool = True
    told_to_register_again: bool = False

    def assignment_changed(self, assignment: ConsumerAssignment) -> None:
        assert self.open, f"pushed to {self.name}'s closed connection"
        self.pushes.append(assignment)

    def controller_lost(self) -> None:
        self.told_to_register_again = True


@dataclass
class _Timer:
    action: Callable[[], None]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualScheduler:
    """Timers that run only when a test fires them."""

    def __init__(self) -> None:
        self.timers: list[_Timer] = []

    def call_later(self, delay: float, action: Callable[[], None]) -> _Timer:
        timer = _Timer(action)
        self.timers.append(timer)
        return timer

    def pending(self) -> list[_Timer]:
        return [t for t in self.timers if not t.cancelled]

    def fire_all(self) -> None:
        for timer in self.pending():
            timer.cancelled = True
            timer.action()


class DrainedSet:
    def __init__(self) -> None:
        self.drained: set[tuple[str, str]] = set()

    def is_drained(self, subscription: str, segment_topic: str) -> bool:
        return (subscription, segment_topic) in self.drained


class SessionLog:
    """The latest registration written per consumer, and how many writes there were."""

    def __init__(self) -> None:
        self.saved: dict[tuple[str, str], ConsumerRegistration] = {}
        self.writes = 0

    def save_registration(self, subscription: str, registration: ConsumerRegistration) -> None:
        self.saved[(subscription, registration.consumer_name)] = registration
        self.writes += 1

    def delete_registration(self, subscription: str, consumer_name: str) -> None:
        self.saved.pop((subscription, consumer_name), None)
        self.writes += 1


class PushRecorder(Recorder[ConsumerAssignment]):
    """A consumer connection whose pushes, arriving on any thread, a test can wait for."""

    def assignment_changed(self, assignment: ConsumerAssignment) -> None:
        self(assignment)

    def controller_lost(self) -> None:
        """Not recorded: the tests that use it wait for assignments only."""
