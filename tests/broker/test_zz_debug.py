import time
import pulsar
from tests.broker.test_producer_contract import producer, Mode

def test_debug(client: pulsar.Client) -> None:
    old = producer(client, Mode.Exclusive, send_timeout_millis=5000)
    old.send(b"before")
    new = producer(client, Mode.ExclusiveWithFencing)
    new.send(b"after")
    started = time.monotonic()
    try:
        old.send(b"fenced")
    except Exception as exc:
        print("RAISED", type(exc).__name__, exc, time.monotonic() - started)
