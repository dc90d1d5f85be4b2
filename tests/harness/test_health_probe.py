"""The health probe: what each kind of answer (or no answer) is recorded as, and a round
of readings per broker until the load stops."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.health_probe import HEALTH_PATH, probe_health, read_health
from harness.ports import free_ports
from harness.target import Node, TargetCluster
from history.writer import HistoryWriter


class _Health(BaseHTTPRequestHandler):
    """Answers the health check with the status its server was given."""

    def do_GET(self) -> None:
        status = self.server.status  # type: ignore[attr-defined]
        assert self.path == HEALTH_PATH
        self.send_response(status)
        self.end_headers()
        self.wfile.write(b"ok" if status == 200 else b'{"reason": "not connected to ZooKeeper"}')

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def broker() -> Iterator[tuple[str, ThreadingHTTPServer]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Health)
    server.status = 200  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", server
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(("status", "answer"), [(200, "healthy"), (503, "unhealthy"),
                                                (500, "unhealthy"), (401, "unknown")])
def test_an_answer_is_read_by_its_status(broker: tuple[str, ThreadingHTTPServer], status: int,
                                         answer: str) -> None:
    url, server = broker
    server.status = status  # type: ignore[attr-defined]
    reading = read_health(url)
    assert reading["answer"] == answer
    if answer == "unhealthy":
        assert (reading["status"], "not connected to ZooKeeper" in reading["reason"]) == (
            status, True)


def test_nothing_listening_is_down() -> None:
    (port,) = free_ports(1)
    assert read_health(f"http://127.0.0.1:{port}") == {"answer": "down"}


def test_each_round_reads_every_broker_until_the_load_stops(
        broker: tuple[str, ThreadingHTTPServer], tmp_path: Path) -> None:
    url, _ = broker
    (closed,) = free_ports(1)
    cluster = TargetCluster(
        "a", ("pulsar://127.0.0.1:1", "pulsar://127.0.0.1:2"),
        (url, f"http://127.0.0.1:{closed}"), None,
        (Node("a-broker1", "broker", "a", "127.0.0.1"),
         Node("a-broker2", "broker", "a", "127.0.0.1")))

    class _Target:
        clusters = (cluster,)

    path = tmp_path / "history.jsonl"
    writer = HistoryWriter(path)
    stop = threading.Event()
    probe = threading.Thread(target=probe_health,
                             args=(_Target(), writer, stop, time.monotonic() + 60))
    probe.start()
    time.sleep(1.5)  # two rounds
    stop.set()
    probe.join(timeout=10)
    writer.close()
    assert not probe.is_alive()
    events = [json.loads(line) for line in path.read_text().splitlines()]
    readings = [(e["value"], e["cluster"], json.loads(e["detail"])) for e in events]
    assert readings[:4] == [
        ("a-broker1", "a", {"broker": "a-broker1", "answer": "healthy"}),
        ("a-broker2", "a", {"broker": "a-broker2", "answer": "down"}),
    ] * 2
    assert all((e["process"], e["type"], e["f"]) == ("observer", "ok", "health")
               for e in events)
