"""`python -m starquake.bench.topic_reader SERVICE_URL TOPIC`: the official client reads
TOPIC from its first message to the last one written, and prints how many it read. The
fuzzing campaign (starquake/bench/fuzz.py) runs it as a process of its own, so that a
client that crashes on what the broker served (as the official client once did on a
chunk without its uuid) is counted, not suffered. Exits non-zero on any failure."""

from __future__ import annotations

import sys

import pulsar

RECEIVE_TIMEOUT_MS = 10_000


def read_all(service_url: str, topic: str) -> int:
    client = pulsar.Client(service_url, operation_timeout_seconds=15,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        count = 0
        while reader.has_message_available():
            reader.read_next(timeout_millis=RECEIVE_TIMEOUT_MS)
            count += 1
        return count
    finally:
        client.close()


def main() -> None:
    service_url, topic = sys.argv[1:3]
    print(read_all(service_url, topic))


if __name__ == "__main__":
    main()
