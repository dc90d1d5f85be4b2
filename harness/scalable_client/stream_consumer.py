"""`StreamConsumer`: an ordered consumer of a scalable topic (PIP-468 "Registration Flow").

It registers with the controller leader (whose URL the DAG watch session names), reads
exactly the segments its assignment lists, one Failover consumer each, and hands messages
to the application one at a time per segment, acknowledging each after the handler
returns. When a sealed segment is drained (end reached, everything acknowledged) it tells
the controller (command 203), which then assigns the children: so a key's messages arrive
in send order across splits and merges. The registration is a session: if the controller's
connection drops, the consumer registers again under the same name, on whichever broker
leads by then, and keeps its assignment if it comes back within the grace period.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from harness.scalable_client.errors import NotController
from harness.scalable_client.retry import retrying
from harness.scalable_client.segment_consumer import MessageHandler
from harness.scalable_client.segment_reader import SegmentReader
from harness.scalable_client.session_events import Assignment, SessionEvents, Unrecorded
from wire.connection import ClientConnection
from wire.errors import ClientError, broker_error
from wire.frames import Frame
from wire.pulsar_api_pb2 import (
    BaseCommand,
    CommandScalableConsumerRegister,
    CommandScalableConsumerUnregister,
    CommandScalableSegmentDrained,
    CommandSubscribe,
    ScalableSubscriptionType,
    ServerError,
)

log = logging.getLogger(__name__)

_KINDS = (BaseCommand.SCALABLE_CONSUMER_ASSIGNMENT,)
DRAIN_REPORT_INTERVAL = 1.0
"""A drained segment still assigned is reported again this often (a report can reach a
controller that is just taking over)."""


class StreamConsumer(SegmentReader):
    def __init__(self, service_urls: list[str], topic: str, subscription: str,
                 consumer_name: str, on_message: MessageHandler, timeout: float = 60.0,
                 token: str | None = None, events: SessionEvents | None = None) -> None:
        super().__init__(service_urls, topic, subscription, consumer_name, on_message, timeout,
                         token)
        self._events = events or Unrecorded()
        self._controller: ClientConnection | None = None
        self._consumer_id = 0
        self.assigned: tuple[int, ...] = ()
        self.assignments: list[tuple[int, ...]] = []
        """Every assignment received, in order (tests compare them across failovers)."""
        self.registered: list[tuple[int, ...]] = []
        """The assignment each registration answered with (a re-registration within the
        grace period answers with the session's assignment)."""
        self._lost = asyncio.Event()
        self._applying = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._pushes: set[asyncio.Task[None]] = set()
        """Pushed assignments being followed (held, so that none is collected half done)."""

    async def start(self) -> StreamConsumer:
        await self.dag.start()
        await self._register()
        self._tasks = [asyncio.create_task(self._keep_registered()),
                       asyncio.create_task(self._report_drained())]
        return self

    async def _register(self) -> None:
        loop = asyncio.get_running_loop()

        async def attempt() -> None:
            await self.dag.wait_for(lambda d: d.controller_url is not None)
            assert self.dag.controller_url is not None
            connection = await self._pool.connection(self.dag.controller_url)
            consumer_id, request_id = connection.next_id(), connection.next_id()
            self._lost.clear()
            connection.register(_KINDS, consumer_id, self._pushed, self._lost.set)
            told = False

            def tell(assignment: Assignment) -> None:
                nonlocal told
                told = True
                self._events.registered(assignment, None)

            self._events.registering()
            try:
                frame = await connection.request(BaseCommand(
                    type=BaseCommand.SCALABLE_CONSUMER_REGISTER,
                    scalableConsumerRegister=CommandScalableConsumerRegister(
                        request_id=request_id, consumer_id=consumer_id, topic=str(self.topic),
                        subscription=self.subscription, consumer_name=self.name,
                        subscription_type=ScalableSubscriptionType.SCALABLE_STREAM)),
                    request_id)
                answer = frame.command.scalableConsumerAssignment
                if answer.HasField("error"):
                    connection.unregister(_KINDS, consumer_id)
                    if answer.error == ServerError.ServiceNotReady:
                        raise NotController(answer.message, answer.leader_broker_url or None)
                    raise broker_error(answer.error, answer.message)
                self._controller, self._consumer_id = connection, consumer_id
                await self._apply(frame, tell)
            except BaseException as exc:
                if not told:
                    self._events.registered(None, type(exc).__name__,
                                            refused=isinstance(exc, NotController))
                raise
            self.registered.append(self.assigned)
        await retrying(f"registering {self.name}", attempt, loop.time() + self._timeout,
                       retry_on=(ClientError, OSError, TimeoutError))

    async def _keep_registered(self) -> None:
        while True:
            await self._lost.wait()
            log.info("%s lost its controller connection; registering again", self.name)
            await self._register()

    def _pushed(self, frame: Frame) -> None:
        answer = frame.command.scalableConsumerAssignment
        if answer.HasField("error"):
            # The broker we registered with no longer leads the controller: our drain
            # reports reach nobody there. Register again with the leader the DAG names.
            log.info("%s: %s; registering again", self.name, answer.message)
            if self._controller is not None:
                self._controller.unregister(_KINDS, self._consumer_id)
            self._lost.set()
            return
        task = asyncio.create_task(self._apply(frame, self._events.pushed))
        self._pushes.add(task)
        task.add_done_callback(self._pushes.discard)

    async def _apply(self, frame: Frame, tell: Callable[[Assignment], None]) -> None:
        """Follow an assignment (a registration's answer or a push); one at a time, in
        arrival order (closing a segment's consumer waits for the broker, and the next
        assignment must not start meanwhile). `tell` hears of it first, so that whoever
        records assignments records them in the order they are followed."""
        async with self._applying:
            answer = frame.command.scalableConsumerAssignment
            wanted = {s.segment_id: s.segment_topic for s in answer.segments}
            self.assigned = tuple(sorted(wanted))
            self.assignments.append(self.assigned)
            assignment = Assignment(
                answer.layout_epoch if answer.HasField("layout_epoch") else None, self.assigned)
            tell(assignment)
            for segment_id in [i for i in self._segments if i not in wanted]:
                await self._segments.pop(segment_id).close()
            for segment_id, topic in wanted.items():
                if segment_id not in self._segments:
                    self._attach(segment_id, topic, CommandSubscribe.Failover)

    async def _report_drained(self) -> None:
        while True:
            await asyncio.sleep(DRAIN_REPORT_INTERVAL / 4)
            connection = self._controller
            for segment_id, consumer in list(self._segments.items()):
                if consumer.drained.is_set() and connection is not None and not connection.closed:
                    connection.send(BaseCommand(
                        type=BaseCommand.SCALABLE_SEGMENT_DRAINED,
                        scalableSegmentDrained=CommandScalableSegmentDrained(
                            consumer_id=self._consumer_id, segment_id=segment_id)))
                    consumer.drained.clear()
                    asyncio.get_running_loop().call_later(DRAIN_REPORT_INTERVAL,
                                                          consumer.drained.set)

    async def close(self, unregister: bool = True) -> None:
        """Stop; with `unregister` the session ends now, otherwise the controller keeps it
        for the grace period (a consumer process that will come back)."""
        for task in self._tasks:
            task.cancel()
        connection = self._controller
        if unregister and connection is not None and not connection.closed:
            request_id = connection.next_id()
            self._events.unregistering()
            try:
                await connection.request(BaseCommand(
                    type=BaseCommand.SCALABLE_CONSUMER_UNREGISTER,
                    scalableConsumerUnregister=CommandScalableConsumerUnregister(
                        request_id=request_id, consumer_id=self._consumer_id)), request_id,
                    timeout=5.0)
            except Exception as exc:
                log.info("unregistering %s: %s", self.name, exc)
                self._events.unregistered(type(exc).__name__)
            else:
                self._events.unregistered(None)
        await self._close_all()
