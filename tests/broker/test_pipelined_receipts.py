"""A producer with many SENDs in flight: each SEND_RECEIPT names its own message's entry,
so the ids come back distinct and in send order, except under the mutant
`receipt-names-latest-write`, whose receipts name the producer's newest entry."""

from __future__ import annotations

import threading
from typing import Any

from impl.mutants import NONE, Mutants
from tests.broker.conftest import official_client, serving

TOPIC = "persistent://public/default/pipelined"
SENDS = 20


def _receipts(mutants: Mutants = NONE) -> list[tuple[int, int]]:
    """The (ledger id, entry id) each of `SENDS` asynchronous sends was receipted with."""
    with serving(mutants=mutants) as broker:
        client = official_client(broker.url)
        try:
            producer = client.create_producer(TOPIC, batching_enabled=False)
            ids: dict[int, tuple[int, int]] = {}
            all_in = threading.Event()

            def receipted(n: int) -> Any:
                def record(result: Any, message_id: Any) -> None:
                    ids[n] = (message_id.ledger_id(), message_id.entry_id())
                    if len(ids) == SENDS:
                        all_in.set()
                return record

            for n in range(SENDS):
                producer.send_async(f"m{n}".encode(), receipted(n))
            assert all_in.wait(10), f"{len(ids)} of {SENDS} receipts"
            return [ids[n] for n in range(SENDS)]
        finally:
            client.close()


def test_each_receipt_names_its_own_entry() -> None:
    receipts = _receipts()
    assert receipts == sorted(set(receipts))


def test_mutant_receipt_names_latest_write_gives_two_sends_one_position() -> None:
    receipts = _receipts(Mutants.of(["receipt-names-latest-write"]))
    assert len(set(receipts)) < SENDS
