"""A DAG watch session (PIP-468 commands 70-72) kept alive across broker failures: the
latest `Layout` and controller URL of a scalable topic, and a way to wait for a layout
that satisfies a condition. Any broker serves it; when the serving broker goes away the
watcher opens a session on another."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from harness.scalable_client.layout import Layout
from harness.scalable_client.retry import retrying
from wire.connection import ClientConnection, ConnectionPool
from wire.errors import ClientError, broker_error
from wire.frames import Frame
from wire.pulsar_api_pb2 import (
    BaseCommand,
    CommandScalableTopicClose,
    CommandScalableTopicLookup,
)

log = logging.getLogger(__name__)

_KINDS = (BaseCommand.SCALABLE_TOPIC_UPDATE,)


class DagWatcher:
    def __init__(self, pool: ConnectionPool, topic: str, timeout: float,
                 lag_s: float = 0.0) -> None:
        """`lag_s`: how long a pushed DAG waits before it is taken in, for a client that
        learns of layout changes late (the first DAG, a lookup's answer, never waits)."""
        self.topic = topic
        self._lag_s = lag_s
        self._pool = pool
        self._timeout = timeout
        self.layout: Layout | None = None
        self.controller_url: str | None = None
        self._changed = asyncio.Condition()
        self._connection: ClientConnection | None = None
        self._session_id = 0
        self._task: asyncio.Task[None] | None = None
        self._lost = asyncio.Event()
        self._applying: set[asyncio.Task[None]] = set()
        """Pushed DAGs being taken in (held, so that none is collected half done)."""

    async def start(self) -> None:
        """Return once the first DAG is known."""
        await self._open()
        self._task = asyncio.create_task(self._keep_open())

    async def _open(self) -> None:
        loop = asyncio.get_running_loop()

        async def attempt() -> None:
            connection = await self._pool.any_connection()
            session_id, request_id = connection.next_id(), connection.next_id()
            self._lost.clear()
            connection.register(_KINDS, session_id, self._handle, self._lost.set)
            frame = await connection.request(BaseCommand(
                type=BaseCommand.SCALABLE_TOPIC_LOOKUP,
                scalableTopicLookup=CommandScalableTopicLookup(
                    request_id=request_id, session_id=session_id, topic=self.topic)),
                request_id)
            self._connection, self._session_id = connection, session_id
            await self._apply(frame)
        await retrying(f"DAG watch of {self.topic}", attempt, loop.time() + self._timeout)

    async def _keep_open(self) -> None:
        while True:
            await self._lost.wait()
            log.info("DAG watch of %s lost; opening another", self.topic)
            await self._open()

    def _handle(self, frame: Frame) -> None:
        task = asyncio.create_task(self._apply_after_lag(frame))
        self._applying.add(task)
        task.add_done_callback(self._applying.discard)

    async def _apply_after_lag(self, frame: Frame) -> None:
        if self._lag_s:
            await asyncio.sleep(self._lag_s)
        await self._apply(frame)

    async def _apply(self, frame: Frame) -> None:
        """Take a DAG in; an error refuses a lookup, or (pushed) says the topic is gone."""
        update = frame.command.scalableTopicUpdate
        if update.HasField("error"):
            if update.HasField("request_id"):
                raise broker_error(update.error, update.message)
            log.warning("DAG watch of %s ended: %s", self.topic, update.message)
            return
        layout = Layout.of(update.dag)
        async with self._changed:
            if self.layout is None or layout.epoch >= self.layout.epoch:
                self.layout = layout
            self.controller_url = update.dag.controller_broker_url or None
            self._changed.notify_all()

    async def wait_for(self, condition: Callable[[DagWatcher], bool],
                       timeout: float | None = None) -> None:
        """Return once `condition(self)` holds; `ClientError` after `timeout` seconds."""
        try:
            async with self._changed:
                await asyncio.wait_for(self._changed.wait_for(lambda: condition(self)),
                                       timeout or self._timeout)
        except TimeoutError:
            raise ClientError(f"{self.topic}: the DAG did not change as expected within "
                              f"{timeout or self._timeout} s") from None

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        connection = self._connection
        if connection is not None and not connection.closed:
            connection.unregister(_KINDS, self._session_id)
            connection.send(BaseCommand(type=BaseCommand.SCALABLE_TOPIC_CLOSE,
                                        scalableTopicClose=CommandScalableTopicClose(
                                            session_id=self._session_id)))
