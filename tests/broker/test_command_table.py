"""docs/protocol.md's table of every command is true: each command type has its row, the
rows that say `served` are exactly the broker's handlers, and each `refused` request is
answered at once with ERROR NotAllowedError when sent."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from impl.broker.connection import ServerConnection
from tests.broker.conftest import MemoryBroker
from tests.cluster.raw_producer import RawConnection
from wire.frames import encode_command
from wire.pulsar_api_pb2 import BaseCommand, ServerError

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
ROW = re.compile(r"^\| (\d+) \| ([A-Z_]+) \| (client|broker|both) \| (\w+)")


def table() -> dict[str, str]:
    """Command name -> the first word of what the broker does with it."""
    rows = {}
    for line in DOC.read_text().splitlines():
        match = ROW.match(line)
        if match:
            number, name, _, verdict = match.groups()
            assert BaseCommand.Type.Value(name) == int(number), line
            rows[name] = verdict
    return rows


def _of(verdict: str) -> list[str]:
    return sorted(name for name, said in table().items() if said == verdict)


def test_every_command_type_has_one_row() -> None:
    assert sorted(table()) == sorted(BaseCommand.Type.keys())
    assert set(table().values()) <= {"served", "refused", "sent", "ignored"}


def test_the_served_rows_are_the_handlers(memory_broker: MemoryBroker) -> None:
    class NoPeer:
        def get_extra_info(self, _name: str) -> Any:
            return None

    async def handled() -> set[str]:
        connection = ServerConnection(asyncio.StreamReader(), NoPeer(),  # type: ignore[arg-type]
                                      memory_broker.service)
        return {BaseCommand.Type.Name(t) for t in connection.commands_served}

    assert sorted(memory_broker.run(handled())) == _of("served")


@pytest.mark.parametrize("name", _of("refused"))
def test_a_refused_request_is_answered_at_once(memory_broker: MemoryBroker, name: str) -> None:
    kind = BaseCommand.Type.Value(name)
    field = BaseCommand.DESCRIPTOR.fields_by_number[kind].name
    command = BaseCommand(type=kind)
    getattr(command, field).request_id = 41
    connection = RawConnection(memory_broker.url)
    connection.send_bytes(encode_command(command))
    (answer,) = connection.collect(1.0)
    assert (answer.type, answer.error.request_id, answer.error.error) == (
        BaseCommand.ERROR, 41, ServerError.NotAllowedError)
    assert not connection.closed
