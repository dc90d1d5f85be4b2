"""PIP-468's binary commands on one client connection: DAG watch sessions (70-72, served by
any broker) and starquake's consumer registration with the controller (200-203).

A DAG watch session pushes `CommandScalableTopicUpdate` with the whole DAG at once and
after every change of the layout or of the controller leader; changes that come in a burst
are coalesced into one push of the latest state. Serving a session also makes this broker
campaign for the topic's controller, so a topic with watchers always has candidates to
take over when its leader dies.

A registration lives as long as its connection: when the connection closes the controller
starts the consumer's grace period (the keep-alive is the connection's PING/PONG). The
controller pushes assignment changes from its own threads; they are handed to the event
loop, and held back until the registration's own answer has gone out, so a client always
sees its first assignment first.

With authorization on, the commands that open something are checked against the
namespace's permissions as their ordinary twins are: a DAG watch session (70) is a lookup
(`produce` or `consume`), a registration (200) a subscription (`consume`). The refusal is
the command's own answer carrying `AuthorizationError`: a 71, or a 201. Closing a session
(72), unregistering (202) and drain reports (203) act only on what this connection opened
after such a check, as CLOSE_CONSUMER and ACK do, and are not checked again.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from impl.broker.errors import server_error
from impl.metadata.store import Watch
from impl.naming.topic_name import NamespaceName, TopicName
from impl.scalable.errors import NotLeader, ScalableTopicError, ScalableTopicNotFound
from impl.scalable.layout import SegmentLayout
from impl.scalable.service import ScalableTopicService
from impl.scalable.sessions import ConsumerAssignment, SubscriptionType
from impl.security.authorization import CONSUME, LOOKUP
from impl.security.errors import NotAuthenticated, NotAuthorized
from wire.frames import Frame
from wire.pulsar_api_pb2 import (
    AssignedSegmentProto,
    BaseCommand,
    CommandScalableConsumerAssignment,
    CommandScalableTopicUpdate,
    ScalableSubscriptionType,
    ScalableTopicDAG,
    SegmentBrokerAddress,
    SegmentInfoProto,
    SegmentState,
    ServerError,
)
from wire.topic_names import ScalableTopicName

log = logging.getLogger(__name__)

T = TypeVar("T")

_CLIENT_FAILURES = (ScalableTopicError, ValueError, NotAuthenticated, NotAuthorized)
"""Failures of a request that the client caused or can act on: answered, logged in one
line at most; anything else is logged with its traceback."""
_REGISTRATION_IDS = itertools.count(1)
"""Broker-wide ids of registrations: a consumer that reconnects gets a new one, so the
close of its old connection cannot end its new session."""


class Lookup(Protocol):
    async def __call__(self, topic: TopicName) -> str:
        """The broker URL that serves `topic` now."""
        ...


class Permit(Protocol):
    async def __call__(self, namespace: NamespaceName, actions: frozenset[str]) -> None:
        """Raise NotAuthorized unless the connection's role may do one of `actions` on
        the namespace's topics."""
        ...


class Connection(Protocol):
    closed: bool

    def send(self, command: BaseCommand, entry: bytes | None = None) -> None: ...


def dag_of(layout: SegmentLayout, brokers: dict[int, str], controller_url: str | None
           ) -> ScalableTopicDAG:
    """The protocol's `ScalableTopicDAG` of a layout."""
    dag = ScalableTopicDAG(epoch=layout.epoch, controller_broker_url=controller_url or "")
    for segment in sorted(layout.segments.values(), key=lambda s: s.segment_id):
        dag.segments.append(SegmentInfoProto(
            segment_id=segment.segment_id, hash_start=segment.hash_range.start,
            hash_end=segment.hash_range.end,
            state=SegmentState.SEGMENT_ACTIVE if segment.is_active else SegmentState.SEGMENT_SEALED,
            parent_ids=segment.parent_ids, child_ids=segment.child_ids,
            created_at_epoch=segment.created_at_epoch, sealed_at_epoch=segment.sealed_at_epoch))
    for segment_id, url in sorted(brokers.items()):
        dag.segment_brokers.append(SegmentBrokerAddress(segment_id=segment_id, broker_url=url))
    return dag


def assignment_command(consumer_id: int, assignment: ConsumerAssignment,
                       request_id: int | None = None) -> BaseCommand:
    reply = CommandScalableConsumerAssignment(consumer_id=consumer_id,
                                              layout_epoch=assignment.layout_epoch)
    if request_id is not None:
        reply.request_id = request_id
    for segment in assignment.assigned_segments:
        reply.segments.append(AssignedSegmentProto(
            segment_id=segment.segment_id, hash_start=segment.hash_range.start,
            hash_end=segment.hash_range.end, segment_topic=segment.underlying_topic_name))
    return BaseCommand(type=BaseCommand.SCALABLE_CONSUMER_ASSIGNMENT,
                       scalableConsumerAssignment=reply)


def error_code(exc: BaseException) -> ServerError:
    if isinstance(exc, ScalableTopicNotFound):
        return ServerError.TopicNotFound
    if isinstance(exc, NotLeader):
        return ServerError.ServiceNotReady
    return server_error(exc)


def namespace_of(topic: ScalableTopicName) -> NamespaceName:
    return NamespaceName(topic.tenant, topic.namespace)


class DagWatchSession:
    def __init__(self, session_id: int, topic: ScalableTopicName, commands: ScalableCommands
                 ) -> None:
        self.session_id = session_id
        self.topic = topic
        self._commands = commands
        self._changed = asyncio.Event()
        self._watches: list[Watch] = []
        self._task: asyncio.Task[None] | None = None

    async def start(self, request_id: int) -> None:
        """Answer the lookup with the DAG, then push every change until closed."""
        service, loop = self._commands.service, asyncio.get_running_loop()
        update = await self._update()  # raises ScalableTopicNotFound
        service.campaign(self.topic)
        update.scalableTopicUpdate.request_id = request_id
        self._commands.connection.send(update)
        self._watches = await self._commands.blocking(
            service.watch_topic, self.topic,
            lambda: loop.call_soon_threadsafe(self._changed.set))
        self._task = asyncio.create_task(self._push())

    async def _update(self) -> BaseCommand:
        service = self._commands.service
        layout = await self._commands.blocking(service.layout, self.topic)
        controller_url = await self._commands.blocking(service.controller_url, self.topic)
        brokers = {}
        for segment in layout.active_segments:
            try:
                brokers[segment.segment_id] = await self._commands.lookup(
                    TopicName.parse(self.topic.segment_topic(segment)))
            except Exception as exc:  # the client looks segments up itself anyway
                log.info("no broker for %s yet: %s", self.topic.segment_topic(segment), exc)
        return BaseCommand(type=BaseCommand.SCALABLE_TOPIC_UPDATE,
                           scalableTopicUpdate=CommandScalableTopicUpdate(
                               session_id=self.session_id,
                               dag=dag_of(layout, brokers, controller_url)))

    async def _push(self) -> None:
        last: bytes | None = None
        while not self._commands.connection.closed:
            await self._changed.wait()
            self._changed.clear()
            try:
                update = await self._update()
            except ScalableTopicNotFound:
                update = BaseCommand(type=BaseCommand.SCALABLE_TOPIC_UPDATE,
                                     scalableTopicUpdate=CommandScalableTopicUpdate(
                                         session_id=self.session_id,
                                         error=ServerError.TopicNotFound,
                                         message=f"{self.topic} was deleted"))
            except Exception:
                log.exception("DAG of %s could not be read; retrying", self.topic)
                await asyncio.sleep(0.5)
                self._changed.set()
                continue
            encoded = update.SerializeToString()
            if encoded != last:
                self._commands.connection.send(update)
                last = encoded

    def close(self) -> None:
        for watch in self._watches:
            watch.cancel()
        if self._task is not None:
            self._task.cancel()


@dataclass
class _Registration:
    """One consumer registered through this connection, and its pushes."""

    topic: ScalableTopicName
    subscription: str
    consumer_name: str
    registration_id: int
    answered: bool = False
    held: ConsumerAssignment | None = None


@dataclass
class _Pusher:
    """The `AssignmentListener` of one registration: called on controller threads."""

    commands: ScalableCommands
    consumer_id: int
    registration: _Registration
    loop: asyncio.AbstractEventLoop

    def assignment_changed(self, assignment: ConsumerAssignment) -> None:
        self.loop.call_soon_threadsafe(self._deliver, assignment)

    def controller_lost(self) -> None:
        lost = NotLeader(str(self.registration.topic), None)
        self.loop.call_soon_threadsafe(self.commands.register_again, self.consumer_id, lost)

    def _deliver(self, assignment: ConsumerAssignment) -> None:
        if not self.registration.answered:
            self.registration.held = assignment
            return
        self.commands.connection.send(assignment_command(self.consumer_id, assignment))


class ScalableCommands:
    """The handlers of commands 70-72 and 200-203 for one connection."""

    def __init__(self, connection: Connection, service: ScalableTopicService | None,
                 lookup: Lookup, permit: Permit) -> None:
        self.connection = connection
        self._service = service
        self.lookup = lookup
        self._permit = permit
        self._sessions: dict[int, DagWatchSession] = {}
        self._registrations: dict[int, _Registration] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def service(self) -> ScalableTopicService:
        if self._service is None:
            raise ScalableTopicError("scalable topics are disabled on this broker")
        return self._service

    def handlers(self) -> dict[int, Callable[[Frame], None]]:
        return {
            BaseCommand.SCALABLE_TOPIC_LOOKUP: self._lookup,
            BaseCommand.SCALABLE_TOPIC_CLOSE: self._close_session,
            BaseCommand.SCALABLE_CONSUMER_REGISTER: self._register,
            BaseCommand.SCALABLE_CONSUMER_UNREGISTER: self._unregister,
            BaseCommand.SCALABLE_SEGMENT_DRAINED: self._drained,
        }

    async def blocking(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.service.executor, fn, *args)

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # --- DAG watch sessions --------------------------------------------------------------

    def _lookup(self, frame: Frame) -> None:
        request = frame.command.scalableTopicLookup

        async def start() -> None:
            try:
                topic = ScalableTopicName.parse(request.topic)
                await self._permit(namespace_of(topic), LOOKUP)
                session = DagWatchSession(request.session_id, topic, self)
                self._sessions[request.session_id] = session
                await session.start(request.request_id)
            except Exception as exc:
                self._sessions.pop(request.session_id, None)
                if not isinstance(exc, _CLIENT_FAILURES):
                    log.exception("DAG watch of %s failed", request.topic)
                self.connection.send(BaseCommand(
                    type=BaseCommand.SCALABLE_TOPIC_UPDATE,
                    scalableTopicUpdate=CommandScalableTopicUpdate(
                        session_id=request.session_id, request_id=request.request_id,
                        error=error_code(exc), message=str(exc))))
        self._spawn(start())

    def _close_session(self, frame: Frame) -> None:
        request = frame.command.scalableTopicClose
        session = self._sessions.pop(request.session_id, None)
        if session is not None:
            session.close()

    # --- consumer registration -----------------------------------------------------------

    def _register(self, frame: Frame) -> None:
        request = frame.command.scalableConsumerRegister
        kind = (SubscriptionType.CHECKPOINT
                if request.subscription_type == ScalableSubscriptionType.SCALABLE_CHECKPOINT
                else SubscriptionType.STREAM)

        async def register() -> None:
            try:
                topic = ScalableTopicName.parse(request.topic)
                await self._permit(namespace_of(topic), frozenset({CONSUME}))
                registration = _Registration(topic, request.subscription, request.consumer_name,
                                             next(_REGISTRATION_IDS))
                pusher = _Pusher(self, request.consumer_id, registration,
                                 asyncio.get_running_loop())

                def run() -> ConsumerAssignment:
                    return self.service.controller(topic).register_consumer(
                        request.subscription, request.consumer_name,
                        registration.registration_id, pusher, kind)
                assignment = await self.blocking(run)
            except Exception as exc:
                if not isinstance(exc, _CLIENT_FAILURES):
                    log.exception("registration of %s failed", request.consumer_name)
                self._refuse(request.consumer_id, exc, request.request_id)
                return
            self._registrations[request.consumer_id] = registration
            self.connection.send(assignment_command(request.consumer_id, assignment,
                                                    request.request_id))
            registration.answered = True
            held = registration.held
            if held is not None and held != assignment:
                self.connection.send(assignment_command(request.consumer_id, held))
            if self.connection.closed:
                self._disconnected(registration)
        self._spawn(register())

    def _unregister(self, frame: Frame) -> None:
        request = frame.command.scalableConsumerUnregister
        registration = self._registrations.pop(request.consumer_id, None)

        async def unregister() -> None:
            if registration is not None:
                try:
                    await self.blocking(lambda: self.service.controller(
                        registration.topic).unregister_consumer(registration.subscription,
                                                                registration.consumer_name))
                except ScalableTopicError as exc:
                    log.info("unregistering %s: %s", registration.consumer_name, exc)
            self.connection.send(BaseCommand(type=BaseCommand.SUCCESS, success={
                "request_id": request.request_id}))
        self._spawn(unregister())

    def _drained(self, frame: Frame) -> None:
        request = frame.command.scalableSegmentDrained
        registration = self._registrations.get(request.consumer_id)
        if registration is None:
            return

        async def refresh() -> None:
            try:
                await self.blocking(lambda: self.service.controller(
                    registration.topic).drain_changed(registration.subscription))
            except NotLeader as exc:
                # Leadership moved while the consumer stayed connected here (a pause that
                # outlived our session): its reports would go nowhere, and its stream would
                # stop at the next sealed segment. Send it to the new leader.
                self.register_again(request.consumer_id, exc)
            except ScalableTopicError as exc:
                log.info("drain report of %s ignored: %s", registration.consumer_name, exc)
        self._spawn(refresh())

    def register_again(self, consumer_id: int, exc: NotLeader) -> None:
        """Forget a consumer's registration here and push it an error, on which it
        registers again with the leader its DAG names: the controller it registered with
        no longer leads (`exc`)."""
        registration = self._registrations.pop(consumer_id, None)
        if registration is None:
            return
        log.info("%s registered with a controller that no longer leads; told to register "
                 "again", registration.consumer_name)
        self._refuse(consumer_id, exc)

    def _refuse(self, consumer_id: int, exc: BaseException, request_id: int | None = None) -> None:
        """An assignment carrying an error: the answer to a refused registration, or,
        without a request id, a push telling a registered consumer to register again."""
        refusal = CommandScalableConsumerAssignment(consumer_id=consumer_id,
                                                    error=error_code(exc), message=str(exc))
        if request_id is not None:
            refusal.request_id = request_id
        if isinstance(exc, NotLeader) and exc.leader_url:
            refusal.leader_broker_url = exc.leader_url
        self.connection.send(BaseCommand(type=BaseCommand.SCALABLE_CONSUMER_ASSIGNMENT,
                                         scalableConsumerAssignment=refusal))

    def _disconnected(self, registration: _Registration) -> None:
        def report() -> None:
            # Only a controller that exists here can hold the session.
            controller = self.service.existing_controller(registration.topic)
            if controller is not None:
                controller.consumer_disconnected(registration.subscription,
                                                 registration.consumer_name,
                                                 registration.registration_id)
        def log_failure(done: asyncio.Future[None]) -> None:
            failure = done.exception()
            if failure:
                log.warning("disconnect of %s not reported: %s", registration.consumer_name,
                            failure)

        future = asyncio.get_running_loop().run_in_executor(self.service.executor, report)
        future.add_done_callback(log_failure)

    # --- the connection closed -----------------------------------------------------------

    def close(self) -> None:
        for session in self._sessions.values():
            session.close()
        self._sessions.clear()
        for task in self._tasks:
            task.cancel()
        registrations, self._registrations = list(self._registrations.values()), {}
        if self._service is not None:
            for registration in registrations:
                self._disconnected(registration)
