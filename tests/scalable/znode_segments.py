"""Segment topics kept as znodes in the real ZooKeeper: the controller's `SegmentTopics` and
`SegmentDrainChecker` bound to something that persists, is shared by every controller of a
test, and records what it was asked in order.

Each call is recorded with the layout epoch stored at that moment, which places the
controller's compare-and-set among its other steps: a call that already sees the new epoch
came after the CAS.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from impl.metadata import paths
from impl.metadata.errors import AlreadyExists, NotFound
from impl.metadata.store import MetadataStore
from impl.storage.api import InitialPosition

ROOT = "/test-segment-topics"


@dataclass(frozen=True)
class Call:
    operation: str
    topic: str
    layout_epoch: int | None
    """The stored layout's epoch when the call arrived (None: no layout stored)."""


class ZnodeSegmentTopics:
    def __init__(self, store: MetadataStore, layout_path: str) -> None:
        self._store = store
        self._layout_path = layout_path
        self._lock = threading.Lock()
        self.calls: list[Call] = []
        self.before: Callable[[Call], None] | None = None
        """Runs before each operation takes effect: where tests inject faults."""

    # --- SegmentTopics ---------------------------------------------------------------

    def create(self, segment_topic: str, subscriptions: Iterable[str],
               position: InitialPosition = InitialPosition.EARLIEST) -> None:
        self._record("create", segment_topic)
        wanted = list(subscriptions)

        def add_cursors(state: dict[str, Any]) -> dict[str, Any]:
            for name in wanted:
                state["cursors"].setdefault(name, {"initialPosition": position.name,
                                                   "drained": False})
            return state

        self._ensure(segment_topic)
        self._update(segment_topic, add_cursors)

    def terminate(self, segment_topic: str) -> None:
        self._record("terminate", segment_topic)
        self._update(segment_topic, lambda state: {**state, "terminated": True})

    def subscriptions(self, segment_topic: str) -> set[str]:
        self._record("subscriptions", segment_topic)
        state = self.state(segment_topic)
        return set(state["cursors"]) if state else set()

    def delete(self, segment_topic: str) -> None:
        self._record("delete", segment_topic)
        try:
            self._store.delete(self._path(segment_topic))
        except NotFound:
            pass

    # --- SegmentDrainChecker ---------------------------------------------------------

    def is_drained(self, subscription: str, segment_topic: str) -> bool:
        state = self.state(segment_topic)
        cursor = (state or {"cursors": {}})["cursors"].get(subscription)
        return bool(state and state["terminated"] and cursor and cursor["drained"])

    def mark_drained(self, segment_topic: str, subscription: str) -> None:
        """A consumer of `subscription` has read the terminated topic to its end."""
        def drained(state: dict[str, Any]) -> dict[str, Any]:
            state["cursors"][subscription]["drained"] = True
            return state
        self._update(segment_topic, drained)

    # --- inspection ------------------------------------------------------------------

    def state(self, segment_topic: str) -> dict[str, Any] | None:
        """{"terminated": bool, "cursors": {name: {"initialPosition", "drained"}}}"""
        try:
            return json.loads(self._store.get(self._path(segment_topic)).data)
        except NotFound:
            return None

    def calls_of(self, *operations: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.operation in operations]

    def clear(self) -> None:
        with self._lock:
            self.calls.clear()

    # --- internals -------------------------------------------------------------------

    def _record(self, operation: str, topic: str) -> None:
        try:
            epoch = json.loads(self._store.get(self._layout_path).data)["epoch"]
        except NotFound:
            epoch = None
        call = Call(operation, topic, epoch)
        with self._lock:
            self.calls.append(call)
        if self.before is not None:
            self.before(call)

    def _path(self, segment_topic: str) -> str:
        return f"{ROOT}/{paths.encode(segment_topic, 'segment topic')}"

    def _ensure(self, segment_topic: str) -> None:
        try:
            self._store.create(self._path(segment_topic), json.dumps(
                {"terminated": False, "cursors": {}}).encode())
        except AlreadyExists:
            pass  # creating an existing topic only adds cursors

    def _update(self, segment_topic: str,
                change: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self._store.update(self._path(segment_topic),
                           lambda data: json.dumps(change(json.loads(data))).encode())
