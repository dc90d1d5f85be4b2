"""An acknowledgement's receipt, on the client side of the protocol (`wire/connection`):
an ACK_RESPONSE that names an error is a refusal and raises, as ERROR does. A harness
that took every ACK_RESPONSE for a confirmation recorded acknowledgements a deposed
owner had refused as `ok`, and the new owner's redelivery of those messages then read as
duplicates the system under test never made."""

from __future__ import annotations

import asyncio

import pytest

from tests.protocol.scripted_broker import ScriptedBroker, connect
from wire.connection import ClientConnection
from wire.errors import BrokerError
from wire.pulsar_api_pb2 import BaseCommand, CommandAck, MessageIdData, ServerError


async def _ack(connection: ClientConnection, entry_id: int) -> None:
    request_id = connection.next_id()
    await connection.request(BaseCommand(type=BaseCommand.ACK, ack=CommandAck(
        consumer_id=1, ack_type=CommandAck.Individual,
        message_id=[MessageIdData(ledgerId=7, entryId=entry_id)], request_id=request_id)),
        request_id)


def test_a_refused_ack_raises_and_a_confirmed_one_returns() -> None:
    async def scenario() -> None:
        connection, server = await connect(ScriptedBroker(refused_entries=frozenset({2})))
        await _ack(connection, 1)
        with pytest.raises(BrokerError) as refused:
            await _ack(connection, 2)
        assert refused.value.code == ServerError.ServiceNotReady
        assert "cursor written by another owner" in str(refused.value)
        await _ack(connection, 3)  # the connection still serves
        connection.close()
        server.close()

    asyncio.run(scenario())
