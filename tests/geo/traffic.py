"""Client traffic for the geo tests, through the official client: a producer publishing at
a steady pace in a thread, a consumer acknowledging everything in a thread, and a reader
of a whole topic."""

from __future__ import annotations

import threading
import time
import uuid

import pulsar

from tests.fixtures.receiving import until_quiet


class SteadyProducer:
    """Publishes `m-0`, `m-1`, ... one every `interval` seconds until stopped (at most two
    minutes), keeping what was acknowledged."""

    def __init__(self, client: pulsar.Client, topic: str, interval: float = 0.02) -> None:
        self._producer = client.create_producer(topic)
        self._interval = interval
        self.sent: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)
        self._thread.start()

    def _run(self) -> None:
        deadline = time.monotonic() + 120
        while not self._stop.is_set() and time.monotonic() < deadline:
            key = f"m-{len(self.sent)}"
            self._producer.send(key.encode())
            self.sent.append(key)
            time.sleep(self._interval)

    def stop(self) -> list[str]:
        self._stop.set()
        self._thread.join(60)
        self._producer.close()
        return self.sent


class AckingConsumer:
    """Receives and acknowledges every message in a thread, keeping what arrived (with
    repeats) until stopped."""

    def __init__(self, consumer: pulsar.Consumer) -> None:
        self._consumer = consumer
        self.received: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)
        self._thread.start()

    def _run(self) -> None:
        deadline = time.monotonic() + 180
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                message = self._consumer.receive(timeout_millis=500)
            except pulsar.Timeout:
                continue
            self.received.append(message.data().decode())
            self._consumer.acknowledge(message)

    def stop(self) -> list[str]:
        self._stop.set()
        self._thread.join(30)
        self._consumer.close()
        return self.received


def read_all(client: pulsar.Client, topic: str) -> list[str]:
    """Every message of `topic` in that client's cluster, read by a fresh subscription."""
    consumer = client.subscribe(topic, f"reader-{uuid.uuid4().hex[:6]}",
                                initial_position=pulsar.InitialPosition.Earliest)
    received = []
    for message in until_quiet(consumer, 3000):
        received.append(message.data().decode())
        consumer.acknowledge(message)
    consumer.close()
    return received
