"""The bookie process through its protocol: ledger operations, refusals that never crash
it, durability across SIGKILL, and the `ack-before-durable` mutant losing what it
acknowledged."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Callable
from pathlib import Path

import pytest

from impl.bookie import protocol
from impl.bookie.protocol import Op, Status
from impl.storage.bookie_client import BookieClient
from impl.storage.errors import (
    BadEntryId,
    BookieNotAuthorized,
    BookieUnavailable,
    LedgerClosed,
    LedgerExists,
    LedgerFenced,
    MalformedRequest,
    NoSuchEntry,
    NoSuchLedger,
)
from tests.storage.conftest import Bookie
from tests.storage.running import run
from wire.tokens import mint

pytestmark = [pytest.mark.zk, pytest.mark.cluster]

StartBookie = Callable[..., Bookie]


async def _payloads(client: BookieClient, ledger_id: int, first: int = 0,
                    last: int = 10_000) -> list[bytes]:
    return [entry.data for entry in await client.read(ledger_id, first, last)]


def test_ledger_lifecycle(start_bookie: StartBookie) -> None:
    bookie = start_bookie()

    async def scenario() -> None:
        client = BookieClient(bookie.address)
        await client.create(7)
        with pytest.raises(LedgerExists):
            await client.create(7)
        await asyncio.gather(*(client.add(7, i, b"e%d" % i) for i in range(3)))
        assert await _payloads(client, 7) == [b"e0", b"e1", b"e2"]
        assert await _payloads(client, 7, 1, 1) == [b"e1"]
        with pytest.raises(NoSuchEntry):
            await client.read(7, 3, 5)

        assert await client.fence(7) == 2
        with pytest.raises(LedgerFenced):
            await client.add(7, 3, b"from the old writer")
        assert await client.fence(7) == 2  # a second recovery sees the same end
        await client.close_ledger(7, 2)
        with pytest.raises(LedgerClosed):
            await client.close_ledger(7, 1)
        assert await _payloads(client, 7) == [b"e0", b"e1", b"e2"]

        await client.create(8)
        await client.close_ledger(8, -1)
        with pytest.raises(LedgerClosed):
            await client.add(8, 0, b"after close")

        await client.delete(7)
        with pytest.raises(NoSuchLedger):
            await client.read(7, 0, 0)
        await client.close()

    run(scenario())


def test_out_of_order_duplicate_and_unknown_requests_are_refused(
        start_bookie: StartBookie) -> None:
    bookie = start_bookie()

    async def scenario() -> None:
        client = BookieClient(bookie.address)
        await client.create(1)
        await client.add(1, 0, b"first")
        with pytest.raises(BadEntryId):
            await client.add(1, 0, b"duplicate")
        with pytest.raises(BadEntryId):
            await client.add(1, 2, b"gap")
        with pytest.raises(NoSuchLedger):
            await client.add(99, 0, b"nowhere")
        with pytest.raises(NoSuchLedger):
            await client.fence(99)
        with pytest.raises(MalformedRequest):
            await client._call(Op.CREATE, b"\x01\x02")  # a ledger id is 8 bytes
        assert await _payloads(client, 1) == [b"first"]
        await client.close()

    run(scenario())


def _exchange(address: str, data: bytes) -> bytes:
    """Send raw bytes; everything the bookie answers until it closes or goes quiet."""
    host, _, port = address.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(data)
        sock.settimeout(1.0)
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        except TimeoutError:
            pass
    return received


def test_garbage_gets_an_error_or_closes_only_its_connection(start_bookie: StartBookie) -> None:
    bookie = start_bookie()
    unknown_op = protocol.frame(struct.pack(">BQ", 200, 5))
    answer = _exchange(bookie.address, unknown_op)
    _, request_id, status = protocol.RESPONSE_HEADER.unpack_from(answer, protocol.FRAME_LENGTH.size)
    assert (request_id, status) == (5, Status.MALFORMED)

    assert _exchange(bookie.address, b"\xff\xff\xff\xff" + b"x" * 64) == b""  # closed
    assert _exchange(bookie.address, b"\x00\x00\x00\x02ab") == b""  # shorter than a header

    async def still_serving() -> None:
        client = BookieClient(bookie.address)
        await client.create(3)
        await client.add(3, 0, b"fine")
        assert await _payloads(client, 3) == [b"fine"]
        await client.close()

    run(still_serving())


def test_everything_acknowledged_survives_sigkill_and_a_torn_tail(
        start_bookie: StartBookie) -> None:
    bookie = start_bookie()
    count = 300

    async def write() -> None:
        client = BookieClient(bookie.address)
        await client.create(11)
        await client.create(12)
        await asyncio.gather(*(client.add(11, i, b"m%d" % i) for i in range(count)))
        await client.add(12, 0, b"fenced ledger's entry")
        await client.fence(12)
        await client.create(13)
        await client.close_ledger(13, -1)
        await client.close()

    run(write())
    bookie.kill()
    journal = bookie.data_dir / "journal.log"
    with journal.open("ab") as file:
        file.write(b"\x00\x00\x01\x00torn")  # a record header promising more than follows
    bookie.restart()

    async def verify() -> None:
        client = BookieClient(bookie.address)
        assert await _payloads(client, 11) == [b"m%d" % i for i in range(count)]
        with pytest.raises(LedgerFenced):
            await client.add(12, 1, b"after the restart")
        with pytest.raises(LedgerClosed):
            await client.add(13, 0, b"after the restart")
        await client.add(11, count, b"the journal continues")
        assert (await _payloads(client, 11, count))[-1] == b"the journal continues"
        await client.close()

    run(verify())


@pytest.mark.parametrize("mutants", ["", "ack-before-durable"])
def test_an_acknowledged_add_is_kept_unless_acked_before_durable(
        start_bookie: StartBookie, mutants: str) -> None:
    bookie = start_bookie(mutants)

    async def write() -> None:
        client = BookieClient(bookie.address)
        await client.create(5)
        await client.add(5, 0, b"acknowledged")
        await client.close()

    run(write())
    bookie.kill()  # at once: well within the mutant's lazy sync interval
    bookie.restart()

    async def read() -> list[bytes] | None:
        client = BookieClient(bookie.address)
        try:
            return await _payloads(client, 5)
        except NoSuchEntry:
            return None
        finally:
            await client.close()

    kept = run(read())
    assert kept == ([b"acknowledged"] if not mutants else None)


def test_a_dead_bookie_is_unavailable_not_a_hang(start_bookie: StartBookie) -> None:
    bookie = start_bookie()
    bookie.kill()

    async def scenario() -> None:
        client = BookieClient(bookie.address, connect_timeout=2)
        with pytest.raises(BookieUnavailable):
            await client.create(1)
        await client.close()

    run(scenario())


def test_with_authentication_on_only_the_brokers_role_may_use_the_bookie(
        start_bookie: StartBookie, tmp_path: Path) -> None:
    """A bookie took requests from whoever reached it: read any ledger, fence a topic's,
    or write an entry no broker checked. With a token key it takes them only from a
    connection whose first request presented a token of the brokers' role."""
    key = tmp_path / "token.key"
    key.write_bytes(b"k" * 32)
    guarded = start_bookie("", "--token-secret-key", str(key), "--client-roles", "broker")
    open_bookie = start_bookie()

    async def scenario() -> None:
        refused = {"no token": (BookieClient(guarded.address), "CREATE before AUTH"),
                   "another role": (BookieClient(guarded.address,
                                                 token=mint(key.read_bytes(), "someone")),
                                    "role 'someone' may not use this bookie"),
                   "another key": (BookieClient(guarded.address, token=mint(b"x" * 32, "broker")),
                                   "invalid token")}
        for client, reason in refused.values():
            with pytest.raises(BookieNotAuthorized, match=reason):
                await client.create(1)
            await client.close()
        broker = BookieClient(guarded.address, token=mint(key.read_bytes(), "broker"))
        await broker.create(1)
        await broker.add(1, 0, b"checked by a broker")
        forgers = [BookieClient(guarded.address) for _ in range(2)]
        with pytest.raises(BookieNotAuthorized):
            await forgers[0].add(1, 1, b"written past the broker")
        with pytest.raises(BookieNotAuthorized):
            await forgers[1].fence(1)
        assert await _payloads(broker, 1) == [b"checked by a broker"]
        # A client that presents a token is served by a bookie with authentication off.
        presenting = BookieClient(open_bookie.address, token=mint(b"any", "broker"))
        await presenting.create(2)
        for client in (broker, *forgers, presenting):
            await client.close()

    run(scenario())
