"""The admin driver's broker order: a broker that hangs (a paused process still accepts
connections) is asked last once it has failed to answer, so one frozen broker costs the
driver one timeout, not one per request."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from harness.workloads import scalable_admin
from harness.workloads.scalable_admin import AdminUnreachable, ScalableTopicAdmin

TOPIC = "topic://public/default/orders"


class _Answers(BaseHTTPRequestHandler):
    def _answer(self) -> None:
        body = json.dumps({"epoch": 3, "segments": {}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Silent:
    """Accepts connections and never answers, as a stopped broker's kernel does."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.socket.getsockname()[1]}"

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.accepted.append(connection)

    def close(self) -> None:
        self.socket.close()
        for connection in self.accepted:
            connection.close()


@pytest.fixture
def brokers(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[_Silent, str]]:
    monkeypatch.setattr(scalable_admin, "TIMEOUT", 0.5)
    silent = _Silent()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield silent, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    silent.close()


def test_a_broker_that_gave_no_answer_is_asked_last(brokers: tuple[_Silent, str]) -> None:
    silent, answering = brokers
    admin = ScalableTopicAdmin([silent.url, answering], TOPIC)
    assert admin.metadata()["epoch"] == 3  # a read moves on past the silent broker
    assert admin.metadata()["epoch"] == 3
    assert admin.split(1)["epoch"] == 3
    assert len(silent.accepted) == 1


def test_a_mutation_the_silent_broker_may_have_applied_is_unknown_and_not_repeated(
        brokers: tuple[_Silent, str]) -> None:
    silent, answering = brokers
    admin = ScalableTopicAdmin([silent.url, answering], TOPIC)
    with pytest.raises(AdminUnreachable, match=r"ReadTimeout"):
        admin.split(1)
    assert admin.split(1)["epoch"] == 3  # the next one goes to the broker that answers
    assert len(silent.accepted) == 1
