"""Wait strategies against real sockets and a real HTTP server on loopback, and the error a
user sees when a node does not come up."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import pytest

from harness.waits import (
    CommandSucceeds,
    HttpStatus,
    LogLine,
    NodeNotReady,
    TcpPort,
    wait_ready,
)


@dataclass
class FakeNode:
    """A node seen from the harness: an address, a log, a command runner."""

    name: str = "a-node1"
    ip: str = "127.0.0.1"
    log: str = ""
    alive: bool = True
    exit_codes: list[int] = field(default_factory=list)

    def running(self) -> bool:
        return self.alive

    def logs(self) -> str:
        return self.log

    def exec(self, argv: Sequence[str]) -> int:
        return self.exit_codes.pop(0) if self.exit_codes else 1


@pytest.fixture
def listening_port() -> Iterator[int]:
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        yield server.getsockname()[1]


@pytest.fixture
def http_port() -> Iterator[int]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/health" else 503)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_tcp_port_is_ready_only_while_something_listens(listening_port: int) -> None:
    assert TcpPort(listening_port).ready(FakeNode())
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        closed = unused.getsockname()[1]
    assert not TcpPort(closed).ready(FakeNode())


def test_http_status_compares_the_answer(http_port: int) -> None:
    assert HttpStatus(http_port, "/health").ready(FakeNode())
    assert not HttpStatus(http_port, "/elsewhere").ready(FakeNode())
    assert HttpStatus(http_port, "/elsewhere", status=503).ready(FakeNode())


def test_log_line_matches_any_line() -> None:
    node = FakeNode(log="starting\nholding /lock as 0x1\n")
    assert LogLine(r"^holding /lock").ready(node)
    assert not LogLine(r"^serving").ready(node)


def test_command_succeeds_on_exit_zero() -> None:
    node = FakeNode(exit_codes=[1, 0])
    strategy = CommandSucceeds(("true",))
    assert not strategy.ready(node)
    assert strategy.ready(node)


def test_wait_ends_when_the_strategy_says_ready() -> None:
    node = FakeNode(exit_codes=[1, 1, 0])
    wait_ready(node, CommandSucceeds(("check",)), timeout=5)
    assert node.exit_codes == []


def test_an_exited_node_fails_the_wait_with_its_log() -> None:
    node = FakeNode(log="line 1\nError: no such module impl.bookie\n", alive=False)
    with pytest.raises(NodeNotReady, match=r"(?s)a-node1 exited.*no such module impl.bookie"):
        wait_ready(node, LogLine("serving"), timeout=5)


def test_a_node_never_ready_fails_the_wait_after_the_timeout() -> None:
    node = FakeNode(log="still electing\n")
    with pytest.raises(NodeNotReady, match=r"(?s)a-node1 not ready after 0 s.*still electing"):
        wait_ready(node, LogLine("serving"), timeout=0.2)
