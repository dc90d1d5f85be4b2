"""One client connection: frames in, commands to the topics, frames out.

Commands that need ZooKeeper or storage run as tasks so that the connection keeps reading
(PINGs, SENDs of other producers); PRODUCER, SUBSCRIBE, CLOSE_* and UNSUBSCRIBE take their
turn in arrival order (a client that closes and re-creates a consumer relies on it).
Keep-alive as in Pulsar: after `keepalive` seconds of silence the broker pings, and after
twice that it closes the connection. Bytes that are not a valid frame, and commands a
handler cannot take, close this connection only, with one log line. At most
`max_pending_publishes` SENDs wait for their answer; beyond, reading pauses until one is
answered. A request this broker does not serve is refused with ERROR, never left
unanswered. Until a CONNECT is accepted only PING and PONG are taken besides: any other
command, a second CONNECT too, closes the connection unanswered, as Pulsar's `ServerCnx`
does (its state checks), whatever the security settings.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from impl.broker import commands
from impl.broker.consumer import Consumer
from impl.broker.errors import BrokerRequestError, ConsumerNotFound, SeekRefused, server_error
from impl.broker.limits import (
    DEFAULT_CONNECT_TIMEOUT_S,
    DEFAULT_MAX_PENDING_PUBLISH_REQUESTS,
    PendingPublishes,
)
from impl.broker.namespace_topics import topic_list
from impl.broker.producer import Producer
from impl.broker.scalable_commands import ScalableCommands
from impl.broker.schemas.admission import admit_consumer, producer_schema_version
from impl.broker.schemas.compatibility import SchemaData
from impl.broker.schemas.requested import requested_schema
from impl.broker.service import BrokerService
from impl.broker.subscription import Subscription, position_of
from impl.broker.topic import Topic
from impl.naming.topic_name import NamespaceName, TopicName
from impl.security.authorization import CONSUME, LOOKUP, PRODUCE
from impl.security.errors import NotAuthenticated
from impl.security.guard import OPEN_GUARD, Guard
from impl.storage.api import Position
from wire.frames import (
    DEFAULT_MAX_MESSAGE_SIZE,
    MESSAGE_SIZE_FRAME_PADDING,
    Frame,
    FrameDecoder,
    MalformedFrame,
    encode_command,
)
from wire.keep_alive import KEEPALIVE_S, Silence, keep_alive, ping, pong
from wire.pulsar_api_pb2 import BaseCommand, ServerError

log = logging.getLogger(__name__)

READ_SIZE = 256 * 1024
LIVENESS_TIMEOUT = 5.0
"""Seconds a connection has to answer the PING of a liveness check (Pulsar's
`connectionLivenessCheckTimeoutMillis`)."""
CPP_CLIENT_PREFIX = "Pulsar-CPP-"
"""How the C++ client and those built on it (Python, Node.js) name themselves in CONNECT."""
BEFORE_CONNECT = frozenset({BaseCommand.CONNECT, BaseCommand.PING, BaseCommand.PONG})
"""The commands a connection takes before its CONNECT is accepted: a client that has not
proved a role (or, with authentication off, not even said who it is) may only keep the
connection alive while it connects."""


class ServerConnection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 service: BrokerService, keepalive: float = KEEPALIVE_S,
                 guard: Guard = OPEN_GUARD,
                 max_pending_publishes: int = DEFAULT_MAX_PENDING_PUBLISH_REQUESTS,
                 connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_S) -> None:
        self._reader = reader
        self._writer = writer
        self._service = service
        self._keepalive = keepalive
        self._connect_timeout = connect_timeout
        self._guard = guard
        self.role: str | None = None
        """The role CONNECT proved (None while authentication is off)."""
        peer = writer.get_extra_info("peername") or ("?", 0)
        self.address = f"{peer[0]}:{peer[1]}"
        self._decoder = FrameDecoder(frame_limit(service))
        self._publishes = PendingPublishes(max_pending_publishes)
        self._pongs: list[asyncio.Future[None]] = []
        self._producers: dict[int, tuple[Topic, Producer]] = {}
        self._consumers: dict[int, tuple[Topic, Subscription, Consumer]] = {}
        self._control = asyncio.Lock()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._silence = Silence()
        self.closed = False
        self.connected = False
        """Whether a CONNECT was accepted: until then only BEFORE_CONNECT is taken."""
        self.understands_end_of_topic = True
        self._handlers: dict[int, Callable[[Frame], None]] = {
            BaseCommand.CONNECT: self._connect,
            BaseCommand.PING: lambda _f: self.send(pong()),
            BaseCommand.PONG: self._pong,
            BaseCommand.PARTITIONED_METADATA: self._partitioned_metadata,
            BaseCommand.LOOKUP: self._lookup,
            BaseCommand.PRODUCER: self._producer,
            BaseCommand.SEND: self._send,
            BaseCommand.CLOSE_PRODUCER: self._close_producer,
            BaseCommand.SUBSCRIBE: self._subscribe,
            BaseCommand.FLOW: self._flow,
            BaseCommand.ACK: self._ack,
            BaseCommand.REDELIVER_UNACKNOWLEDGED_MESSAGES: self._redeliver,
            BaseCommand.CLOSE_CONSUMER: self._close_consumer,
            BaseCommand.UNSUBSCRIBE: self._unsubscribe,
            BaseCommand.GET_LAST_MESSAGE_ID: self._last_message_id,
            BaseCommand.SEEK: self._seek,
            BaseCommand.GET_SCHEMA: self._get_schema,
            BaseCommand.GET_OR_CREATE_SCHEMA: self._get_or_create_schema,
            BaseCommand.GET_TOPICS_OF_NAMESPACE: self._topics_of_namespace,
        }
        self._scalable = ScalableCommands(self, service.scalable, self._owner_url, self._permit)
        self._handlers.update(self._scalable.handlers())

    @property
    def commands_served(self) -> frozenset[int]:
        """The command types this broker handles; any other is refused or ignored
        (docs/protocol.md's table of commands is checked against this)."""
        return frozenset(self._handlers)

    # --- the socket --------------------------------------------------------------------

    async def serve(self) -> None:
        keepalive = asyncio.create_task(keep_alive(
            self._keepalive, self._silence, lambda: self.send(ping()), self._silent))
        deadline = asyncio.get_running_loop().call_later(self._connect_timeout,
                                                         self._connect_overdue)
        try:
            while data := await self._reader.read(READ_SIZE):
                self._silence.heard()
                for frame in self._decoder.feed(data):
                    if self.closed:  # frames read with the one that closed it go unheard
                        return
                    self._dispatch(frame)
                await self._publishes.room()
        except MalformedFrame as exc:
            log.warning("closing connection from %s: %s", self.address, exc)
        except (ConnectionError, asyncio.IncompleteReadError) as exc:
            log.info("connection from %s dropped: %s", self.address, exc)
        except Exception as exc:
            # A command whose content a handler could not take (a well-formed frame
            # carrying nonsense): the client's fault, told in one line.
            log.warning("closing connection from %s: unusable command: %s: %s",
                        self.address, type(exc).__name__, exc)
        finally:
            keepalive.cancel()
            deadline.cancel()
            self.close()

    def _connect_overdue(self) -> None:
        if not self.connected:
            log.warning("closing connection from %s: no CONNECT accepted within %.0f s",
                        self.address, self._connect_timeout)
            self.close()

    def send(self, command: BaseCommand, entry: bytes | None = None) -> None:
        if not self.closed:
            self._writer.write(encode_command(command, entry))

    async def drain(self) -> None:
        if not self.closed:
            try:
                await self._writer.drain()
            except ConnectionError:
                self.close()

    def close(self) -> None:
        """Drop the connection: its producers go, its consumers' unacknowledged messages
        are redelivered to others."""
        if self.closed:
            return
        self.closed = True
        self._writer.close()
        # A frame cut off by the close can hold up to 5 MiB: give it back now, not when
        # the cycle collector next finds this connection.
        self._decoder.release()
        for topic, producer in self._producers.values():
            topic.remove_producer(producer)
        for topic, subscription, consumer in self._consumers.values():
            topic.remove_consumer(subscription, consumer)
        self._producers.clear()
        self._consumers.clear()
        self._scalable.close()
        for task in self._tasks:
            task.cancel()

    async def alive(self) -> bool:
        """Ping the client and wait a bounded time for its PONG; close the connection
        (and with it its producers and consumers) when none comes."""
        if self.closed:
            return False
        answered: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pongs.append(answered)
        self.send(ping())
        try:
            async with asyncio.timeout(LIVENESS_TIMEOUT):
                await answered
            return True
        except TimeoutError:
            log.warning("closing connection from %s: no PONG within %.0f s", self.address,
                        LIVENESS_TIMEOUT)
            self.close()
            return False
        finally:
            if answered in self._pongs:
                self._pongs.remove(answered)

    def _pong(self, _frame: Frame) -> None:
        for answered in self._pongs:
            if not answered.done():
                answered.set_result(None)

    def _silent(self, seconds: float) -> None:
        log.warning("closing connection from %s: silent for %.0f s", self.address, seconds)
        self.close()

    # --- dispatching -------------------------------------------------------------------

    def _dispatch(self, frame: Frame) -> None:
        # A type number our protocol does not know parses as no type at all (and would
        # read as CONNECT, the default), so it is checked first.
        kind = frame.command.type if frame.command.HasField("type") else None
        if kind not in BEFORE_CONNECT and not self.connected:
            self._out_of_turn(kind, "before CONNECT")
            return
        handler = self._handlers.get(kind) if kind is not None else None
        if handler is None:
            self._refuse(frame.command)
            return
        handler(frame)

    def _out_of_turn(self, kind: int | None, when: str) -> None:
        """A command the connection's state does not allow: closed unanswered, as Pulsar's
        state checks close the channel (an answer would tell an unconnected client what
        the broker holds)."""
        name = BaseCommand.Type.Name(kind) if kind is not None else "a command of unknown type"
        log.warning("closing connection from %s: %s %s", self.address, name, when)
        self.close()

    def _refuse(self, command: BaseCommand) -> None:
        """A command this broker does not serve. With a request id it is answered with
        ERROR (NotAllowedError, as Pulsar refuses a feature it has turned off, such as
        transactions), so the client fails now rather than at its operation timeout;
        without one there is no one to answer, and it is only logged."""
        name = (BaseCommand.Type.Name(command.type) if command.HasField("type")
                else "a command of unknown type")
        request_id = request_id_of(command)
        log.info("%s sent unsupported %s; %s", self.address, name,
                 "ignored" if request_id is None else "refused")
        if request_id is not None:
            self.send(commands.error(request_id, ServerError.NotAllowedError,
                                     f"{name} is not supported by this broker"))

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._settled)

    def _settled(self, task: asyncio.Task[Any]) -> None:
        """A task of this connection ended; one that failed is told in one line (what a
        hostile client makes fail must not fill the log with tracebacks)."""
        self._tasks.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.warning("a command from %s failed: %s: %s", self.address,
                        type(exc).__name__, exc)

    def _in_turn(self, request_id: int, work: Callable[[], Awaitable[BaseCommand]],
                 answer_error: Callable[[int, ServerError, str], BaseCommand] = commands.error,
                 ordered: bool = True) -> None:
        """Run `work` as a task (in arrival order when `ordered`), send its answer, or the
        error its exception maps to."""
        async def run() -> None:
            try:
                if ordered:
                    async with self._control:
                        reply = await work()
                else:
                    reply = await work()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                code = server_error(exc)
                if code == ServerError.UnknownError:
                    log.warning("request %d from %s failed: %s: %s", request_id,
                                self.address, type(exc).__name__, exc)
                reply = answer_error(request_id, code, str(exc))
            self.send(reply)
        self._spawn(run())

    def _connect(self, frame: Frame) -> None:
        """Authenticate (when switched on) and answer CONNECTED; credentials that prove no
        role are answered with ERROR AuthenticationError and the connection is closed, as
        Pulsar does."""
        connect = frame.command.connect
        if self.connected:
            self._out_of_turn(BaseCommand.CONNECT, "again, once connected")
            return
        try:
            self.role = self._guard.authenticate(
                connect.auth_method_name, connect.auth_data.decode(errors="replace"))
        except NotAuthenticated as exc:
            log.info("refusing connection from %s: %s", self.address, exc)
            self.send(commands.connect_refused(str(exc)))
            self.close()
            return
        self.understands_end_of_topic = not connect.client_version.startswith(
            CPP_CLIENT_PREFIX)
        self.connected = True
        self.send(commands.connected(connect.protocol_version))

    async def _permit(self, namespace: NamespaceName, actions: frozenset[str]) -> None:
        """Raise NotAuthorized (or NotAuthenticated) unless this connection's role may do
        one of `actions` on the namespace; nothing to ask while authorization is off."""
        if self._guard.authorizer is not None:
            await asyncio.to_thread(self._guard.check_namespace, self.role, namespace,
                                    actions)

    def _partitioned_metadata(self, frame: Frame) -> None:
        request = frame.command.partitionMetadata

        async def answer() -> BaseCommand:
            topic = TopicName.parse(request.topic)
            await self._permit(topic.namespace_name, LOOKUP)
            partitions = await self._service.partitions(topic)
            return commands.partitioned_metadata(request.request_id, partitions)
        self._in_turn(request.request_id, answer, commands.partitioned_metadata_failed,
                      ordered=False)

    def _topics_of_namespace(self, frame: Frame) -> None:
        """What a pattern consumer subscribes from (impl/broker/namespace_topics.py)."""
        request = frame.command.getTopicsOfNamespace

        async def answer() -> BaseCommand:
            namespace = NamespaceName.parse(request.namespace)
            await self._permit(namespace, LOOKUP)
            topics = await self._service.topics_of(namespace, request.mode)
            return commands.topics_of_namespace(request.request_id, topic_list(
                topics, request.topics_pattern if request.HasField("topics_pattern") else None,
                request.topics_hash if request.HasField("topics_hash") else None))
        self._in_turn(request.request_id, answer, ordered=False)

    def _lookup(self, frame: Frame) -> None:
        request = frame.command.lookupTopic

        async def answer() -> BaseCommand:
            topic = TopicName.parse(request.topic)
            await self._permit(topic.namespace_name, LOOKUP)
            result = await self._service.ownership.lookup(topic, request.authoritative)
            return commands.lookup_answer(
                request.request_id, result.owner.broker_url, connect=result.is_self,
                authoritative=result.is_self or result.authoritative)
        self._in_turn(request.request_id, answer, commands.lookup_failed, ordered=False)

    async def _owner_url(self, topic: TopicName) -> str:
        return (await self._service.ownership.lookup(topic)).owner.broker_url

    def _producer(self, frame: Frame) -> None:
        request = frame.command.producer

        async def answer() -> BaseCommand:
            topic_name = TopicName.parse(request.topic)
            await self._permit(topic_name.namespace_name, frozenset({PRODUCE}))
            existing = self._producers.get(request.producer_id)
            if existing is not None and not existing[1].closed:
                return commands.producer_success(
                    request.request_id, existing[1].name, existing[1].topic_epoch,
                    schema_version=existing[1].schema_version,
                    last_sequence_id=existing[0].deduplication.last_sequence_id(
                        existing[1].name))
            topic = await self._service.topic(topic_name)
            schema_version = await producer_schema_version(
                self._service.schemas, topic.name,
                SchemaData.declared(request.HasField("schema"), request.schema))
            name = request.producer_name or self._service.producer_name()
            producer, admitted = await topic.add_producer(self, request, name)
            producer.schema_version = schema_version
            self._producers[request.producer_id] = (topic, producer)
            if admitted is None:
                return commands.producer_success(
                    request.request_id, name, producer.topic_epoch,
                    schema_version=schema_version,
                    last_sequence_id=topic.deduplication.last_sequence_id(name))
            self._spawn(self._when_admitted(request.request_id, topic, producer, admitted))
            return commands.producer_success(request.request_id, name, ready=False)
        self._in_turn(request.request_id, answer)

    async def _when_admitted(self, request_id: int, topic: Topic, producer: Producer,
                             admitted: asyncio.Future[None]) -> None:
        """A queued WaitForExclusive producer: answer PRODUCER_SUCCESS again, ready this
        time, once it holds the topic, or ERROR when it was fenced out meanwhile."""
        try:
            await admitted
        except BrokerRequestError as exc:
            self._producers.pop(producer.producer_id, None)
            self.send(commands.error(request_id, exc.code, str(exc)))
            return
        self.send(commands.producer_success(
            request_id, producer.name, producer.topic_epoch,
            schema_version=producer.schema_version,
            last_sequence_id=topic.deduplication.last_sequence_id(producer.name)))

    def _send(self, frame: Frame) -> None:
        send = frame.command.send
        found = self._producers.get(send.producer_id)
        entry = frame.entry if frame.refused is None else frame.refused
        if found is None or entry is None:
            log.info("%s sent to unknown producer %d; dropped", self.address, send.producer_id)
            return
        if (answered := found[1].send(send, entry)) is not None:
            self._publishes.track(answered)

    def _close_producer(self, frame: Frame) -> None:
        request = frame.command.close_producer

        async def answer() -> BaseCommand:
            found = self._producers.pop(request.producer_id, None)
            if found is not None:
                found[0].remove_producer(found[1])
            return commands.success(request.request_id)
        self._in_turn(request.request_id, answer)

    def _subscribe(self, frame: Frame) -> None:
        request = frame.command.subscribe

        async def answer() -> BaseCommand:
            topic_name = TopicName.parse(request.topic)
            await self._permit(topic_name.namespace_name, frozenset({CONSUME}))
            existing = self._consumers.get(request.consumer_id)
            if existing is not None and not existing[2].closed:
                return commands.success(request.request_id)
            topic = await self._service.topic(topic_name)
            await admit_consumer(self._service.schemas, topic, SchemaData.declared(
                request.HasField("schema"), request.schema))
            subscription, consumer = await topic.subscribe(self, request)
            if self.closed:
                topic.remove_consumer(subscription, consumer)
            else:
                self._consumers[request.consumer_id] = (topic, subscription, consumer)
            return commands.success(request.request_id)
        self._in_turn(request.request_id, answer)

    def _consumer(self, consumer_id: int) -> tuple[Topic, Subscription, Consumer] | None:
        found = self._consumers.get(consumer_id)
        return found if found is not None and not found[2].closed else None

    def _flow(self, frame: Frame) -> None:
        flow = frame.command.flow
        if (found := self._consumer(flow.consumer_id)) is not None:
            found[1].flow(found[2], flow.messagePermits)

    def _ack(self, frame: Frame) -> None:
        ack = frame.command.ack
        if (found := self._consumer(ack.consumer_id)) is not None:
            self._spawn(found[1].acknowledge(found[2], ack))
        elif ack.HasField("request_id"):
            self.send(commands.ack_response(ack.consumer_id, ack.request_id,
                                            ServerError.ConsumerNotFound, "no such consumer"))

    def _redeliver(self, frame: Frame) -> None:
        request = frame.command.redeliverUnacknowledgedMessages
        if (found := self._consumer(request.consumer_id)) is not None:
            found[1].redeliver(found[2], list(request.message_ids))

    def _close_consumer(self, frame: Frame) -> None:
        request = frame.command.close_consumer

        async def answer() -> BaseCommand:
            found = self._consumers.pop(request.consumer_id, None)
            if found is not None:
                found[0].remove_consumer(found[1], found[2])
            return commands.success(request.request_id)
        self._in_turn(request.request_id, answer)

    def _last_message_id(self, frame: Frame) -> None:
        """What readers ask before reading (`has_message_available`)."""
        request = frame.command.getLastMessageId

        async def answer() -> BaseCommand:
            found = self._consumer(request.consumer_id)
            if found is None:
                raise ConsumerNotFound(request.consumer_id)
            topic, subscription, _ = found
            last, batch_index = await topic.last_message()
            return commands.last_message_id(request.request_id, last, batch_index,
                                            subscription.cursor.mark_delete_position)
        self._in_turn(request.request_id, answer, ordered=False)

    def _seek(self, frame: Frame) -> None:
        """Reset the consumer's subscription to a message id or a publish time. In turn with
        SUBSCRIBE: the consumers it disconnects come back after the reset is done."""
        request = frame.command.seek

        async def answer() -> BaseCommand:
            found = self._consumer(request.consumer_id)
            if found is None:
                raise SeekRefused(f"no consumer {request.consumer_id} on this connection")
            topic, subscription, _ = found
            read_from: Position
            if request.HasField("message_id"):
                read_from = position_of(request.message_id)
            elif request.HasField("message_publish_time"):
                read_from = await topic.first_published_at_or_after(
                    request.message_publish_time)
            else:
                raise SeekRefused("SEEK names neither a message id nor a publish time")
            await subscription.reset(read_from)
            log.info("%s reset subscription %s of %s to %s", self.address, subscription.name,
                     topic.name, read_from)
            return commands.success(request.request_id)
        self._in_turn(request.request_id, answer)

    def _get_schema(self, frame: Frame) -> None:
        """A version of the topic's schema (the latest when none is named): how a consumer
        learns the writer's schema of a message to decode it."""
        request = frame.command.getSchema

        async def answer() -> BaseCommand:
            await self._permit(TopicName.parse(request.topic).namespace_name, LOOKUP)
            schema, version = await requested_schema(self._service.schemas, request)
            return commands.schema(request.request_id, schema, version)
        self._in_turn(request.request_id, answer, commands.schema_failed, ordered=False)

    def _get_or_create_schema(self, frame: Frame) -> None:
        """The version of a schema on the topic, registered if new: a producer's check,
        without a producer."""
        request = frame.command.getOrCreateSchema

        async def answer() -> BaseCommand:
            topic_name = TopicName.parse(request.topic)
            await self._permit(topic_name.namespace_name, frozenset({PRODUCE}))
            topic = await self._service.topic(topic_name)
            version = await producer_schema_version(
                self._service.schemas, topic.name, SchemaData.declared(True, request.schema))
            return commands.schema_version(request.request_id, version or b"")
        self._in_turn(request.request_id, answer, commands.schema_version_failed)

    def _unsubscribe(self, frame: Frame) -> None:
        request = frame.command.unsubscribe

        async def answer() -> BaseCommand:
            found = self._consumers.get(request.consumer_id)
            if found is not None:
                await found[0].unsubscribe(found[1], found[2])
                self._consumers.pop(request.consumer_id, None)
            return commands.success(request.request_id)
        self._in_turn(request.request_id, answer)


def frame_limit(service: BrokerService) -> int:
    """The largest frame a client may send: the max message size announced in CONNECTED
    plus Pulsar's padding for the command and metadata around it. The official client
    refuses a larger message itself (`MessageTooBig`) unless it chunks it, so only a
    client that ignores CONNECTED meets this limit, and its connection is closed, as
    Pulsar's frame decoder closes it."""
    if service.mutants.on("frame-limit-without-padding"):
        return DEFAULT_MAX_MESSAGE_SIZE  # a full-size message or chunk no longer fits
    return DEFAULT_MAX_MESSAGE_SIZE + MESSAGE_SIZE_FRAME_PADDING


def request_id_of(command: BaseCommand) -> int | None:
    """The request id a command carries, if any. Pulsar's envelope puts the body of a
    command of type N in field N, so this needs no table of commands."""
    if not command.HasField("type"):
        return None
    field = BaseCommand.DESCRIPTOR.fields_by_number.get(command.type)
    if field is None or not command.HasField(field.name):
        return None
    body = getattr(command, field.name)
    if "request_id" not in body.DESCRIPTOR.fields_by_name or not body.HasField("request_id"):
        return None
    return int(body.request_id)
