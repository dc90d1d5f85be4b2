"""An in-process front end over in-memory ledgers, one broker that owns everything: fast
tests of dispatch logic with the official client (real ownership and storage are tested in
tests/cluster)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import pulsar
import pytest

from impl.admin.topic_stats import topic_stats
from impl.broker.dedup_policy import NO_DEDUPLICATION, DeduplicationPolicy
from impl.broker.limits import DEFAULT_LIMITS, ConnectionLimits
from impl.broker.schemas.registry import SchemaRegistry
from impl.broker.server import BinaryServer
from impl.broker.service import BrokerService
from impl.mutants import NONE, Mutants
from impl.naming.topic_name import NamespaceName, TopicName
from impl.ownership.brokers import BrokerInfo
from impl.ownership.namespace_service import LookupResult, TopicCloser
from impl.security.guard import OPEN_GUARD, Guard
from tests.broker.memory_ledger import MemoryLedger
from tests.broker.memory_schemas import MemorySchemas

T = TypeVar("T")


class OwnsEverything:
    """The `TopicOwnership` of a one-broker cluster."""

    def __init__(self) -> None:
        self.me = BrokerInfo("pulsar://127.0.0.1:0", "http://127.0.0.1:0")
        self.ledgers: dict[TopicName, MemoryLedger] = {}
        self.partitioned: dict[TopicName, int] = {}
        """Partition counts, as the admin API would have stored them."""
        self._close_clients: TopicCloser | None = None

    async def lookup(self, topic: TopicName, authoritative: bool = False) -> LookupResult:
        return LookupResult(self.me, True, True)

    async def load_topic(self, topic: TopicName) -> MemoryLedger:
        return self.ledgers.setdefault(topic, MemoryLedger(str(topic)))

    async def serve_without_ledger(self, topic: TopicName) -> None:
        pass

    async def partitions(self, topic: TopicName) -> int:
        return self.partitioned.get(topic, 0)

    async def persistent_topics(self, namespace: NamespaceName) -> list[str]:
        partitions = {topic.partition(n) for topic, count in self.partitioned.items()
                      for n in range(count)}
        return sorted(str(t) for t in {*partitions, *self.ledgers}
                      if t.persistent and t.namespace_name == namespace)

    async def topic_lost(self, topic: TopicName) -> None:
        await self.unload_topic(topic)

    async def unload_topic(self, topic: TopicName) -> None:
        assert self._close_clients is not None
        await self._close_clients(topic)

    def set_topic_closer(self, close_clients: TopicCloser) -> None:
        self._close_clients = close_clients


class MemoryBroker:
    def __init__(self, keepalive: float, mutants: Mutants = NONE,
                 deduplication: DeduplicationPolicy = NO_DEDUPLICATION,
                 guard: Guard = OPEN_GUARD,
                 limits: ConnectionLimits = DEFAULT_LIMITS) -> None:
        self.ownership = OwnsEverything()
        self.schemas = MemorySchemas()
        self.service = BrokerService(self.ownership, "test",
                                     SchemaRegistry(self.schemas, mutants), mutants=mutants,
                                     deduplication=deduplication)
        self.server = BinaryServer(self.service, keepalive, guard, limits)
        self.url = ""
        self.loop = asyncio.new_event_loop()

    def run(self, work: Coroutine[Any, Any, T], timeout: float = 10) -> T:
        """Run a coroutine on the broker's loop (its state is not thread-safe)."""
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout)

    def ledger(self, topic: str) -> MemoryLedger:
        return self.ownership.ledgers[TopicName.parse(topic)]

    def unload(self, topic: str) -> None:
        """What a new owner does: clients are sent away and the topic is loaded afresh
        over the same (stored) ledger."""
        self.run(self.ownership.unload_topic(TopicName.parse(topic)))

    def backlog(self, topic: str, subscription: str) -> int:
        async def read() -> int:
            return self.ledger(topic).cursors()[subscription].backlog()
        return self.run(read())

    def topic_stats(self, topic: str) -> dict[str, Any]:
        """What the admin API's `/stats` answers for `topic`."""
        async def read() -> dict[str, Any]:
            clients = self.service.client_stats(TopicName.parse(topic))
            return topic_stats(self.ledger(topic), clients)
        return self.run(read())


@contextlib.contextmanager
def serving(keepalive: float = 30.0, mutants: Mutants = NONE,
            deduplication: DeduplicationPolicy = NO_DEDUPLICATION,
            guard: Guard = OPEN_GUARD,
            limits: ConnectionLimits = DEFAULT_LIMITS) -> Iterator[MemoryBroker]:
    """A broker on its own loop and thread for the duration of the block."""
    broker = MemoryBroker(keepalive, mutants, deduplication, guard, limits)
    thread = threading.Thread(target=broker.loop.run_forever, daemon=True)
    thread.start()

    async def start() -> None:
        await broker.server.start("127.0.0.1", 0)
        scheme = "pulsar+ssl" if guard.config.tls else "pulsar"
        broker.url = f"{scheme}://127.0.0.1:{broker.server.port}"
        broker.ownership.me = BrokerInfo(broker.url, "http://127.0.0.1:0")

    broker.run(start())
    try:
        yield broker
    finally:
        broker.run(broker.service.close())
        broker.run(broker.server.close())
        broker.loop.call_soon_threadsafe(broker.loop.stop)
        thread.join(10)


@pytest.fixture
def memory_broker(request: pytest.FixtureRequest) -> Iterator[MemoryBroker]:
    """Parametrize indirectly with a keep-alive interval in seconds (default 30)."""
    with serving(keepalive=getattr(request, "param", 30.0)) as broker:
        yield broker


def official_client(url: str) -> pulsar.Client:
    return pulsar.Client(url, operation_timeout_seconds=10,
                         logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))


@pytest.fixture
def client(memory_broker: MemoryBroker) -> Iterator[pulsar.Client]:
    client = official_client(memory_broker.url)
    yield client
    # A producer the broker fenced (ExclusiveWithFencing) is closed already, and the
    # client may say so as it closes everything: no failure of the test's.
    with contextlib.suppress(pulsar.AlreadyClosed):
        client.close()
