"""One client connection to a broker: requests matched to answers by id, and the commands a
broker sends unasked (receipts, messages, DAG and assignment pushes) routed to whoever
registered for them. `ConnectionPool` keeps one connection per broker URL and looks topics
up, following redirects, as Pulsar's clients do.

Both sides of the protocol use it: the harness's scalable-topics client
(`harness/scalable_client`) and the brokers' replicators, which produce to a remote
cluster as any client would (`impl/replication/remote_producer.py`)."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Callable, Sequence
from urllib.parse import urlsplit

from wire.errors import ConnectionClosed, broker_error
from wire.frames import Frame, FrameDecoder, encode_command
from wire.keep_alive import KEEPALIVE_S, Silence, keep_alive, ping, pong
from wire.pulsar_api_pb2 import (
    BaseCommand,
    CommandConnect,
    CommandLookupTopic,
    CommandLookupTopicResponse,
)
from wire.tokens import TOKEN_METHOD

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 19
REQUEST_TIMEOUT = 30.0

Handler = Callable[[Frame], None]

# Where an unasked command's owner id lives: (field of BaseCommand, id attribute).
_ROUTES: dict[int, tuple[str, str]] = {
    BaseCommand.SEND_RECEIPT: ("send_receipt", "producer_id"),
    BaseCommand.SEND_ERROR: ("send_error", "producer_id"),
    BaseCommand.CLOSE_PRODUCER: ("close_producer", "producer_id"),
    BaseCommand.MESSAGE: ("message", "consumer_id"),
    BaseCommand.REACHED_END_OF_TOPIC: ("reachedEndOfTopic", "consumer_id"),
    BaseCommand.CLOSE_CONSUMER: ("close_consumer", "consumer_id"),
    BaseCommand.ACTIVE_CONSUMER_CHANGE: ("active_consumer_change", "consumer_id"),
    BaseCommand.SCALABLE_TOPIC_UPDATE: ("scalableTopicUpdate", "session_id"),
    BaseCommand.SCALABLE_CONSUMER_ASSIGNMENT: ("scalableConsumerAssignment", "consumer_id"),
}
# Answers to requests: (field, request id attribute).
_ANSWERS: dict[int, str] = {
    BaseCommand.SUCCESS: "success",
    BaseCommand.ERROR: "error",
    BaseCommand.PRODUCER_SUCCESS: "producer_success",
    BaseCommand.LOOKUP_RESPONSE: "lookupTopicResponse",
    BaseCommand.ACK_RESPONSE: "ackResponse",
    BaseCommand.SCALABLE_TOPIC_UPDATE: "scalableTopicUpdate",
    BaseCommand.SCALABLE_CONSUMER_ASSIGNMENT: "scalableConsumerAssignment",
}


class ClientConnection:
    """`keepalive` seconds: ping the broker after that much silence and close after twice
    that (Pulsar's client `keepAliveIntervalSeconds`). None leaves a silent connection open
    until TCP gives up, which is fine for short-lived test clients and wrong for a
    replicator, whose disconnection PIP-33's snapshots must notice. `token`: presented in
    CONNECT (Pulsar's token authentication); a broker that refuses it answers ERROR, which
    `open` raises as `NotPermitted`."""

    def __init__(self, url: str, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.url = url
        self._reader = reader
        self._writer = writer
        self._decoder = FrameDecoder()
        self._requests: dict[int, asyncio.Future[Frame]] = {}
        self._handlers: dict[tuple[int, int], Handler] = {}
        self._on_close: dict[tuple[tuple[int, ...], int], Callable[[], None]] = {}
        self._ids = itertools.count(1)
        self.closed = False
        self._task: asyncio.Task[None] | None = None
        self._keepalive: asyncio.Task[None] | None = None
        self._silence = Silence()

    @classmethod
    async def open(cls, url: str, timeout: float = 10.0, keepalive: float | None = None,
                   token: str | None = None) -> ClientConnection:
        """Connect and say CONNECT, presenting `token` (Pulsar's token authentication) if
        given; a broker that refuses the credentials raises NotPermitted
        (`AuthenticationError`)."""
        address = urlsplit(url)
        async with asyncio.timeout(timeout):
            reader, writer = await asyncio.open_connection(address.hostname, address.port)
        connection = cls(url, reader, writer)
        connection._task = asyncio.create_task(connection._read())
        connected = connection._expect_connected()
        connect = CommandConnect(client_version="starquake-scalable",
                                 protocol_version=PROTOCOL_VERSION)
        if token is not None:
            connect.auth_method_name, connect.auth_data = TOKEN_METHOD, token.encode()
        connection.send(BaseCommand(type=BaseCommand.CONNECT, connect=connect))
        async with asyncio.timeout(timeout):
            answer = (await connected).command
        if answer.type == BaseCommand.ERROR:
            connection.close()
            raise broker_error(answer.error.error, answer.error.message)
        if keepalive is not None:
            connection._keepalive = asyncio.create_task(keep_alive(
                keepalive, connection._silence, lambda: connection.send(ping()),
                connection._silent))
        return connection

    def _expect_connected(self) -> asyncio.Future[Frame]:
        """CONNECTED, or the ERROR a broker answers a refused CONNECT with."""
        future: asyncio.Future[Frame] = asyncio.get_running_loop().create_future()
        self._requests[-1] = future
        return future

    def next_id(self) -> int:
        """A fresh id for a request, producer, consumer or session on this connection."""
        return next(self._ids)

    def send(self, command: BaseCommand, entry: bytes | None = None) -> None:
        if self.closed:
            raise ConnectionClosed(f"connection to {self.url} is closed")
        self._writer.write(encode_command(command, entry))

    async def request(self, command: BaseCommand, request_id: int,
                      timeout: float = REQUEST_TIMEOUT) -> Frame:
        """Send `command` and wait for the answer carrying `request_id`. An answer that
        refuses raises: ERROR, and an ACK_RESPONSE naming an error (the broker did not
        apply the acknowledgement; returning it would let a caller count it confirmed)."""
        future: asyncio.Future[Frame] = asyncio.get_running_loop().create_future()
        self._requests[request_id] = future
        try:
            self.send(command)
            async with asyncio.timeout(timeout):
                frame = await future
        finally:
            self._requests.pop(request_id, None)
        answer = frame.command
        if answer.type == BaseCommand.ERROR:
            raise broker_error(answer.error.error, answer.error.message)
        if answer.type == BaseCommand.ACK_RESPONSE and answer.ackResponse.HasField("error"):
            raise broker_error(answer.ackResponse.error, answer.ackResponse.message)
        return frame

    def register(self, kinds: tuple[int, ...], owner_id: int, handler: Handler,
                 on_close: Callable[[], None]) -> None:
        """Route unasked commands of `kinds` for `owner_id` (a producer, consumer or
        session id) to `handler`; `on_close` runs once if the connection closes first."""
        for kind in kinds:
            self._handlers[(kind, owner_id)] = handler
        self._on_close[(kinds, owner_id)] = on_close

    def unregister(self, kinds: tuple[int, ...], owner_id: int) -> None:
        for kind in kinds:
            self._handlers.pop((kind, owner_id), None)
        self._on_close.pop((kinds, owner_id), None)

    async def _read(self) -> None:
        try:
            while data := await self._reader.read(256 * 1024):
                self._silence.heard()
                for frame in self._decoder.feed(data):
                    self._dispatch(frame)
        except Exception as exc:
            log.info("connection to %s lost: %s", self.url, exc)
        finally:
            self.close()

    def _dispatch(self, frame: Frame) -> None:
        command = frame.command
        if command.type == BaseCommand.CONNECTED:
            self._resolve(-1, frame)
        elif command.type == BaseCommand.ERROR and self._resolve(-1, frame):
            return  # CONNECT refused: its ERROR answers no request of ours
        elif command.type == BaseCommand.PING:
            self.send(pong())
        answer = _ANSWERS.get(command.type)
        if answer is not None:
            body = getattr(command, answer)
            if body.HasField("request_id") and self._resolve(body.request_id, frame):
                return
        route = _ROUTES.get(command.type)
        if route is not None:
            owner = getattr(getattr(command, route[0]), route[1])
            handler = self._handlers.get((command.type, owner))
            if handler is not None:
                handler(frame)

    def _resolve(self, request_id: int, frame: Frame) -> bool:
        future = self._requests.get(request_id)
        if future is None or future.done():
            return False
        future.set_result(frame)
        return True

    def _silent(self, seconds: float) -> None:
        log.warning("closing connection to %s: silent for %.1f s", self.url, seconds)
        self.close()

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self._writer.close()
        if self._keepalive is not None and self._keepalive is not asyncio.current_task():
            self._keepalive.cancel()
        for future in self._requests.values():
            if not future.done():
                future.set_exception(ConnectionClosed(f"connection to {self.url} closed"))
        callbacks, self._on_close, self._handlers = list(self._on_close.values()), {}, {}
        for callback in callbacks:
            callback()
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()


def service_urls(service_url: str) -> list[str]:
    """Each broker of a service URL, which may name several as Pulsar's clients take them:
    `pulsar://h1:6650,h2:6650` -> `pulsar://h1:6650`, `pulsar://h2:6650`."""
    scheme, sep, rest = service_url.partition("://")
    hosts, slash, path = rest.partition("/")
    return [f"{scheme}{sep}{host}{slash}{path}" for host in hosts.split(",")]


def joined_service_url(urls: Sequence[str]) -> str:
    """The one service URL naming every broker of `urls` (which share a scheme)."""
    scheme = urls[0].partition("://")[0]
    return f"{scheme}://" + ",".join(url.partition("://")[2].rstrip("/") for url in urls)


class ConnectionPool:
    """One live connection per broker URL, and topic lookups; `keepalive` and `token` as
    for `ClientConnection.open`, for each of them. Pulsar's clients keep every connection
    alive by default, and so does a pool: a consumer waiting for messages sends nothing,
    so without pings a connection whose broker vanished without a FIN (a container gone
    with its network, a host cut off while the broker closed its side) would wait for
    TCP's many minutes instead of reconnecting within two intervals."""

    def __init__(self, service_urls: list[str], keepalive: float | None = KEEPALIVE_S,
                 token: str | None = None) -> None:
        self.service_urls = list(service_urls)
        self.keepalive = keepalive
        self._token = token
        self._connections: dict[str, ClientConnection] = {}
        self._opening: dict[str, asyncio.Lock] = {}
        self._next = itertools.count()

    async def connection(self, url: str) -> ClientConnection:
        lock = self._opening.setdefault(url, asyncio.Lock())
        async with lock:
            found = self._connections.get(url)
            if found is None or found.closed:
                found = self._connections[url] = await ClientConnection.open(
                    url, keepalive=self.keepalive, token=self._token)
            return found

    async def any_connection(self) -> ClientConnection:
        """A connection to one of the service URLs, trying each in turn."""
        last: Exception | None = None
        for _ in range(len(self.service_urls)):
            url = self.service_urls[next(self._next) % len(self.service_urls)]
            try:
                return await self.connection(url)
            except OSError as exc:
                last = exc
        raise ConnectionClosed(f"no broker of {self.service_urls} answers: {last}")

    async def lookup(self, topic: str) -> ClientConnection:
        """The connection to the broker serving `topic`, following redirects."""
        connection = await self.any_connection()
        authoritative = False
        for _ in range(8):
            request_id = connection.next_id()
            frame = await connection.request(BaseCommand(
                type=BaseCommand.LOOKUP, lookupTopic=CommandLookupTopic(
                    topic=topic, request_id=request_id, authoritative=authoritative)),
                request_id)
            answer = frame.command.lookupTopicResponse
            if answer.response == CommandLookupTopicResponse.Failed:
                raise broker_error(answer.error, answer.message)
            target = await self.connection(answer.brokerServiceUrl)
            if answer.response == CommandLookupTopicResponse.Connect:
                return target
            connection, authoritative = target, answer.authoritative
        raise ConnectionClosed(f"lookup of {topic} redirected too often")

    def close(self) -> None:
        for connection in self._connections.values():
            connection.close()
        self._connections.clear()

