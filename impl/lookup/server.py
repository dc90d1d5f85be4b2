"""The lookup service's binary-protocol front door (document 003: it answers lookups and
partition metadata; data never passes through it).

A client whose service URL is the lookup service sends CONNECT, PARTITIONED_METADATA and
LOOKUP here. A LOOKUP is answered with a `Redirect` (not authoritative) to the
`brokerServiceUrl` of the cluster that serves the topic's tenant; the client then looks the
topic up at that cluster, whose brokers redirect further to the owner, and connects there.
When a topic is unloaded, its clients look it up again through this door, so after the
tenant's record changes they land in the new cluster.

With a guard that authenticates, CONNECT must carry a valid token, as Pulsar's proxy
requires of its clients: a refused CONNECT is answered ERROR AuthenticationError and the
connection closed. Whether the role may use the topic is the cluster's to decide, where the
client looks it up again. Before a CONNECT is accepted nothing else is answered.
"""

from __future__ import annotations

import asyncio
import logging

from impl.broker import commands
from impl.lookup.directory import TenantDirectory, TenantMoving, UnknownCluster, UnknownTenant
from impl.metadata.errors import MetadataError
from impl.naming.topic_name import TopicName
from impl.security.errors import NotAuthenticated
from impl.security.guard import OPEN_GUARD, Guard
from wire.frames import FrameDecoder, MalformedFrame, encode_command
from wire.keep_alive import pong
from wire.pulsar_api_pb2 import BaseCommand, CommandConnect, ServerError
from wire.topic_names import InvalidTopicName

log = logging.getLogger(__name__)


class LookupServer:
    def __init__(self, directory: TenantDirectory, guard: Guard = OPEN_GUARD) -> None:
        self._directory = directory
        self._guard = guard
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self, host: str, port: int) -> None:
        self._server = await asyncio.start_server(self._serve, host, port)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.close()
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.add(writer)
        decoder = FrameDecoder()
        connected = False
        try:
            while data := await reader.read(64 * 1024):
                for frame in decoder.feed(data):
                    command = frame.command
                    if command.type == BaseCommand.CONNECT:
                        greeting = self._connect(command.connect)
                        writer.write(encode_command(greeting))
                        connected = greeting.type == BaseCommand.CONNECTED
                        if not connected:
                            return
                    elif not connected:
                        log.info("lookup connection sent %s before CONNECT; closed",
                                 BaseCommand.Type.Name(command.type))
                        return
                    elif (reply := await self._answer(command)) is not None:
                        writer.write(encode_command(reply))
        except (MalformedFrame, ConnectionError) as exc:
            log.info("lookup connection closed: %s", exc)
        finally:
            self._writers.discard(writer)
            writer.close()

    def _connect(self, connect: CommandConnect) -> BaseCommand:
        try:
            self._guard.authenticate(connect.auth_method_name,
                                     connect.auth_data.decode(errors="replace"))
        except NotAuthenticated as exc:
            log.info("refusing a lookup client: %s", exc)
            return commands.connect_refused(str(exc))
        return commands.connected(connect.protocol_version)

    async def _answer(self, command: BaseCommand) -> BaseCommand | None:
        if command.type == BaseCommand.PING:
            return pong()
        if command.type == BaseCommand.PARTITIONED_METADATA:
            metadata = command.partitionMetadata
            _, code, reason = await self._route(metadata.topic)
            if code is not None:
                return commands.partitioned_metadata_failed(metadata.request_id, code, reason)
            return commands.partitioned_metadata(metadata.request_id, 0)  # as every broker here
        if command.type == BaseCommand.LOOKUP:
            request = command.lookupTopic
            url, code, reason = await self._route(request.topic)
            if code is not None:
                return commands.lookup_failed(request.request_id, code, reason)
            return commands.lookup_answer(request.request_id, url, connect=False,
                                          authoritative=False)
        if command.type != BaseCommand.PONG:
            log.info("the lookup service does not serve %s; ignored",
                     BaseCommand.Type.Name(command.type))
        return None

    async def _route(self, topic: str) -> tuple[str, ServerError | None, str]:
        """The `brokerServiceUrl` for the topic's tenant, or the error to answer."""
        try:
            url = await asyncio.to_thread(self._directory.route, TopicName.parse(topic).tenant)
        except InvalidTopicName as exc:
            return "", ServerError.InvalidTopicName, str(exc)
        except (UnknownTenant, UnknownCluster) as exc:
            return "", ServerError.TopicNotFound, str(exc)
        except (TenantMoving, MetadataError) as exc:
            return "", ServerError.ServiceNotReady, str(exc)
        return url, None, ""
