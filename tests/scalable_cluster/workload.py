"""What the end-to-end tests run and judge: keyed sends recorded with their times and
segments, consumers recording deliveries, and the checks a user would make (lost, out of
order, a parent that took a write after its child did), in the terms of history.md."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import requests

from harness.scalable_client.producer import ScalableProducer, SendResult
from harness.scalable_client.segment_consumer import Message
from impl.scalable.layout import SegmentLayout

NAMESPACE = "public/default"


class ScalableAdmin:
    """The Scalable Topics admin API of one broker, as a test calls it."""

    def __init__(self, admin_url: str, topic: str) -> None:
        self.namespace_url = f"{admin_url}/admin/v2/scalable/{NAMESPACE}"
        self.base = f"{self.namespace_url}/{topic}"
        self.topic = f"topic://{NAMESPACE}/{topic}"

    def listed(self) -> list[str]:
        """The namespace's scalable topics, as this broker lists them."""
        response = requests.get(self.namespace_url, timeout=30)
        assert response.status_code == 200, response.text
        names: list[str] = response.json()
        return names

    def call(self, method: str, suffix: str = "", **kwargs: Any) -> requests.Response:
        kwargs.setdefault("timeout", 60)
        return requests.request(method, self.base + suffix, **kwargs)

    def ok(self, method: str, suffix: str = "", **kwargs: Any) -> Any:
        response = self.call(method, suffix, **kwargs)
        assert response.status_code < 300, (method, suffix, response.status_code, response.text)
        return response.json() if response.content else None

    def segment_state(self, descriptor: str) -> Any:
        """The Segments API's view of one segment: cursors, drained, clients."""
        url = self.base.replace("/scalable/", "/segments/") + f"/{descriptor}"
        return requests.get(url, timeout=30).json()

    def layout(self) -> SegmentLayout:
        return SegmentLayout.from_metadata(self.ok("GET"))


@dataclass(frozen=True)
class Send:
    key: str
    value: str
    invoked: float
    completed: float
    result: SendResult


@dataclass
class Received:
    """First deliveries per value, in delivery order."""

    values: list[tuple[str, str]] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)

    def merged(self, other: Received) -> Received:
        """What two consumers of one subscription received together."""
        return Received(self.values + other.values, self.seen | other.seen)

    async def __call__(self, message: Message) -> None:
        value = message.payload.decode()
        if value not in self.seen:
            self.seen.add(value)
            self.values.append((message.key, value))


class KeyedLoad:
    """`count` sends over `keys` keys, one every `interval` seconds; each recorded."""

    def __init__(self, producer: ScalableProducer, keys: int, prefix: str = "v") -> None:
        self._producer = producer
        self._keys = keys
        self._prefix = prefix
        self.sends: list[Send] = []
        self.failed: list[tuple[str, str, BaseException]] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._next = 0

    def send(self, n: int) -> None:
        for _ in range(n):
            i = self._next
            self._next += 1
            self._tasks.append(asyncio.create_task(self._one(f"k{i % self._keys}",
                                                             f"{self._prefix}{i}")))

    async def _one(self, key: str, value: str) -> None:
        invoked = time.monotonic()
        try:
            result = await self._producer.send(key, value.encode())
        except Exception as exc:
            self.failed.append((key, value, exc))
            return
        self.sends.append(Send(key, value, invoked, time.monotonic(), result))

    async def run(self, count: int, interval: float) -> None:
        for _ in range(count):
            self.send(1)
            await asyncio.sleep(interval)

    async def settled(self) -> None:
        await asyncio.gather(*self._tasks)


async def wait_until(condition: Callable[[], bool], timeout: float, what: str,
                     explain: Callable[[], str] = lambda: "") -> None:
    """Poll `condition`; on timeout fail with `what` and whatever `explain()` tells."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, (
            f"timed out after {timeout} s waiting for {what}. {explain()}")
        await asyncio.sleep(0.1)


def lost(sends: list[Send], received: Received) -> list[str]:
    """Values whose send completed ok and that the consumer never got."""
    return [s.value for s in sends if s.value not in received.seen]


def out_of_order(sends: list[Send], received: Received) -> list[tuple[str, str]]:
    """history.md `order`: two values of one key delivered opposite to their sends, where
    the first send completed before the second was invoked."""
    position = {value: i for i, (_key, value) in enumerate(received.values)}
    by_key: dict[str, list[Send]] = defaultdict(list)
    for send in sends:
        by_key[send.key].append(send)
    pairs = []
    for key_sends in by_key.values():
        for a in key_sends:
            for b in key_sends:
                if (a.completed < b.invoked and a.value in position and b.value in position
                        and position[a.value] > position[b.value]):
                    pairs.append((a.value, b.value))
    return pairs


def undelivered(sends: list[Send], received: Received) -> str:
    """Where the lost values were stored: what a failed wait for delivery reports."""
    missing = set(lost(sends, received))
    segments = sorted({s.result.segment_id for s in sends if s.value in missing})
    return f"{len(missing)} values undelivered, sent to segments {segments}"


def dual_writes(sends: list[Send], layout: SegmentLayout) -> list[str]:
    """history.md `dual-write`: a send ok on an ancestor segment invoked after some send on
    a descendant had completed ok."""
    first_ok: dict[int, float] = {}
    for send in sends:
        segment = send.result.segment_id
        first_ok[segment] = min(first_ok.get(segment, send.completed), send.completed)
    found = []
    for send in sends:
        descendants = layout.lineage(send.result.segment_id).descendants
        if any(send.invoked > first_ok[d] for d in descendants if d in first_ok):
            found.append(send.value)
    return found
