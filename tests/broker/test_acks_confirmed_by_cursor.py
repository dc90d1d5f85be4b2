"""The harness settles the official client's acks by the subscription's durable cursor
(harness/workloads/cursors.py): read through a stand-in for the admin API that answers
`/stats` and `/internalStats` from the in-process broker, as ours does."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pulsar
import pytest

from harness.workloads.cursors import POLL_S as CURSOR_POLL_S
from harness.workloads.cursors import CursorObserver
from harness.workloads.official_client import (
    acknowledge_recorded,
    record_and_acknowledge,
    record_delivery,
)
from history.writer import ClientProcess, HistoryWriter, SequentialIds
from impl.admin.topic_stats import internal_stats
from tests.broker.conftest import MemoryBroker

TOPIC = "persistent://public/default/cursor-acks"
DRAIN_S = 2.0
FIELDS = {"topic": TOPIC, "subscription": "s", "consumer": "c0", "cluster": "a"}


@pytest.fixture
def admin_url(memory_broker: MemoryBroker) -> Iterator[str]:
    """An admin API answering the topic's `/stats` and `/internalStats`."""
    class Stats(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            answer: dict[str, Any]
            if self.path.endswith("/internalStats"):
                async def read() -> dict[str, Any]:
                    return internal_stats(memory_broker.ledger(TOPIC))
                answer = memory_broker.run(read())
            else:
                answer = memory_broker.topic_stats(TOPIC)
            body = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Stats)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join(5)


class _AckNeverSent:
    """A consumer whose acknowledgements never leave the client (a lost ack)."""

    def acknowledge(self, message: pulsar.Message) -> None:
        pass


def _events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@contextmanager
def _five_sent(client: pulsar.Client, admin_url: str,
               tmp_path: Path) -> Iterator[tuple[pulsar.Consumer, ClientProcess, CursorObserver]]:
    """Five messages sent to a subscription's consumer; a history, with the observer
    watching the subscription from the start to its last reading on leaving."""
    consumer = client.subscribe(TOPIC, "s", consumer_name="c0",
                                initial_position=pulsar.InitialPosition.Earliest)
    producer = client.create_producer(TOPIC, batching_enabled=False)
    for n in range(5):
        producer.send(f"m{n}".encode())
    ids = SequentialIds("p")
    with HistoryWriter(tmp_path / "history.jsonl") as history:
        cursors = CursorObserver(history, ids)
        cursors.watch("a", [admin_url], TOPIC)
        cursors.start()
        yield consumer, ClientProcess(history, ids), cursors
        cursors.finish()


def _wait_for_backlog(broker: MemoryBroker, left: int) -> None:
    """Until the subscription's backlog is `left` (the client sends its acks in groups,
    a moment later), for at most `DRAIN_S`."""
    deadline = time.monotonic() + DRAIN_S
    while broker.backlog(TOPIC, "s") != left and time.monotonic() < deadline:
        time.sleep(0.1)


def _read_and_ack(broker: MemoryBroker, client: pulsar.Client, admin_url: str,
                  tmp_path: Path, lose_acks: bool) -> list[dict[str, Any]]:
    """Five messages received and acknowledged with the observer watching, then a
    drain's wait; the history."""
    with _five_sent(client, admin_url, tmp_path) as (consumer, process, cursors):
        for _ in range(5):
            message = consumer.receive(timeout_millis=5000)
            record_and_acknowledge(process, _AckNeverSent() if lose_acks else consumer,
                                   message, FIELDS, cursors)
        _wait_for_backlog(broker, 0)
    return _events(tmp_path / "history.jsonl")


def test_acks_the_cursor_covers_complete_ok(memory_broker: MemoryBroker, client: pulsar.Client,
                                            admin_url: str, tmp_path: Path) -> None:
    events = _read_and_ack(memory_broker, client, admin_url, tmp_path, lose_acks=False)
    acks = [e for e in events if e["f"] == "ack" and e["type"] != "invoke"]
    assert [e["type"] for e in acks] == ["ok"] * 5
    assert all(json.loads(e["detail"]) == {"confirmed_by": "cursor"} for e in acks)
    positions = {e["value"]: e["position"] for e in events if e["f"] == "recv"}
    assert all(e["position"] == positions[e["value"]] for e in acks)
    final = [e for e in events if e["f"] == "cursor"][-1]
    assert final["subscription"] == "s" and final["process"] == "observer"
    assert final["position"] == positions["m4"]
    assert json.loads(final["detail"]) == {"individually_deleted": [], "backlog": 0,
                                           "consumers": 1, "unacked": 0}


def test_acks_the_cursor_never_covers_stay_unconfirmed(memory_broker: MemoryBroker,
                                                       client: pulsar.Client, admin_url: str,
                                                       tmp_path: Path) -> None:
    events = _read_and_ack(memory_broker, client, admin_url, tmp_path, lose_acks=True)
    acks = [e for e in events if e["f"] == "ack" and e["type"] != "invoke"]
    assert [(e["type"], e["error"]) for e in acks] == [("info", "unconfirmed")] * 5
    final = [e for e in events if e["f"] == "cursor"][-1]
    assert json.loads(final["detail"])["backlog"] == 5


class _CumulativeAsIndividual:
    """A consumer whose cumulative acknowledgement acknowledges only the message it
    names, as a broker that took it for an individual one would."""

    def __init__(self, consumer: pulsar.Consumer) -> None:
        self._consumer = consumer

    def acknowledge_cumulative(self, message: pulsar.Message) -> None:
        self._consumer.acknowledge(message)


def _ack_third_cumulatively(broker: MemoryBroker, client: pulsar.Client, admin_url: str,
                            tmp_path: Path, as_individual: bool) -> list[dict[str, Any]]:
    """Five messages received, the third acknowledged cumulatively; the history once the
    broker's backlog shows the acknowledgement applied and a reading came after."""
    with _five_sent(client, admin_url, tmp_path) as (consumer, process, cursors):
        received = [consumer.receive(timeout_millis=5000) for _ in range(5)]
        for message in received:
            record_delivery(process, message, FIELDS)
        acker = _CumulativeAsIndividual(consumer) if as_individual else consumer
        acknowledge_recorded(acker, received[2], "m2", FIELDS, cursors, cumulative=True)
        _wait_for_backlog(broker, 4 if as_individual else 2)
        time.sleep(CURSOR_POLL_S * 2)
    return _events(tmp_path / "history.jsonl")


def test_a_cumulative_ack_completes_ok_once_the_mark_delete_reaches_it(
        memory_broker: MemoryBroker, client: pulsar.Client, admin_url: str,
        tmp_path: Path) -> None:
    events = _ack_third_cumulatively(memory_broker, client, admin_url, tmp_path,
                                     as_individual=False)
    acks = [e for e in events if e["f"] == "ack"]
    assert [(e["type"], json.loads(e["detail"])) for e in acks] == [
        ("invoke", {"cumulative": True}),
        ("ok", {"cumulative": True, "confirmed_by": "cursor"})]
    positions = {e["value"]: e["position"] for e in events if e["f"] == "recv"}
    assert [e["position"] for e in events if e["f"] == "cursor"][-1] == positions["m2"]


def test_a_cumulative_ack_the_cursor_holds_only_individually_stays_unconfirmed(
        memory_broker: MemoryBroker, client: pulsar.Client, admin_url: str,
        tmp_path: Path) -> None:
    """The third message deleted on its own, the two before it not: the cumulative ack
    did not do what it promises, and the history must not say it did."""
    events = _ack_third_cumulatively(memory_broker, client, admin_url, tmp_path,
                                     as_individual=True)
    acks = [e for e in events if e["f"] == "ack" and e["type"] != "invoke"]
    assert [(e["type"], e["error"]) for e in acks] == [("info", "unconfirmed")]
    final = json.loads([e for e in events if e["f"] == "cursor"][-1]["detail"])
    assert len(final["individually_deleted"]) == 1 and final["backlog"] == 4
