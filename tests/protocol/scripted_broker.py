"""A broker scripted on loopback for the client side of the protocol (`wire/`): it
answers CONNECT, answers PINGs while `answering` (and counts them), and answers each ACK
that asks for a receipt, refusing those whose entry id is in `refused_entries`."""

from __future__ import annotations

import asyncio

from impl.broker import commands
from wire.connection import ClientConnection
from wire.frames import FrameDecoder, encode_command
from wire.keep_alive import pong
from wire.pulsar_api_pb2 import BaseCommand, ServerError


class ScriptedBroker:
    def __init__(self, refused_entries: frozenset[int] = frozenset()) -> None:
        self.answering = True
        self.pings = 0
        self.refused_entries = refused_entries

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        decoder = FrameDecoder()
        while data := await reader.read(65536):
            for frame in decoder.feed(data):
                command = frame.command
                if command.type == BaseCommand.CONNECT:
                    writer.write(encode_command(commands.connected(19)))
                elif command.type == BaseCommand.PING:
                    self.pings += 1
                    if self.answering:
                        writer.write(encode_command(pong()))
                elif command.type == BaseCommand.ACK and command.ack.HasField("request_id"):
                    refused = command.ack.message_id[0].entryId in self.refused_entries
                    writer.write(encode_command(commands.ack_response(
                        command.ack.consumer_id, command.ack.request_id,
                        ServerError.ServiceNotReady if refused else None,
                        "cursor written by another owner" if refused else "")))
        writer.close()


async def connect(broker: ScriptedBroker, keepalive: float | None = None
                  ) -> tuple[ClientConnection, asyncio.Server]:
    """A client connection to `broker`, served on a fresh loopback port."""
    server = await asyncio.start_server(broker.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    connection = await ClientConnection.open(f"pulsar://127.0.0.1:{port}",
                                             keepalive=keepalive)
    return connection, server
