"""Delayed actions (grace-period timers) behind a small interface, so tests can fire timers
when they choose instead of sleeping."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol


class Cancellable(Protocol):
    def cancel(self) -> None: ...


class Scheduler(Protocol):
    def call_later(self, delay: float, action: Callable[[], None]) -> Cancellable:
        """Run `action` once, about `delay` seconds from now, unless cancelled first."""
        ...


class TimerScheduler:
    """One daemon `threading.Timer` per action: grace timers are few (one per disconnected
    consumer) and long, so a thread each costs nothing that matters."""

    def call_later(self, delay: float, action: Callable[[], None]) -> Cancellable:
        timer = threading.Timer(delay, action)
        timer.daemon = True
        timer.start()
        return timer
