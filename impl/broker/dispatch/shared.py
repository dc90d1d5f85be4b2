"""Shared: entries go round-robin to whichever consumer has permits."""

from __future__ import annotations

from impl.broker.consumer import Consumer
from impl.broker.dispatch.base import Dispatcher
from impl.broker.entries import DispatchEntry


class SharedDispatcher(Dispatcher):
    sub_type_name = "Shared"
    honours_delivery_time = True

    def __init__(self) -> None:
        super().__init__()
        self._next = 0

    def route(self, entry: DispatchEntry) -> Consumer | None:
        count = len(self.consumers)
        for step in range(count):
            consumer = self.consumers[(self._next + step) % count]
            if consumer.can_take(entry):
                self._next = (self._next + step + 1) % count
                return consumer
        return None
