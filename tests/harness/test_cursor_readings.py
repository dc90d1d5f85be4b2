"""Which broker a cursor reading asks first (harness/workloads/cursors.py): each round
starts at the next broker in turn, so that a broker which believes it owns the topic
while another does is asked too, not only the first broker of the list."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from harness.workloads import cursors
from history.cursor import CursorReading
from history.writer import HistoryWriter, SequentialIds

URLS = ("http://b1", "http://b2", "http://b3")


def test_each_round_of_readings_starts_at_the_next_broker(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    asked: list[str] = []
    five = threading.Event()

    def read(admin_urls: Sequence[str], topic: str) -> dict[str, CursorReading] | None:
        assert sorted(admin_urls) == list(URLS)  # every broker stays a fallback
        asked.append(admin_urls[0])
        if len(asked) >= 5:
            five.set()
        return None

    monkeypatch.setattr(cursors, "read_cursors", read)
    monkeypatch.setattr(cursors, "POLL_S", 0.01)
    with HistoryWriter(tmp_path / "history.jsonl") as history:
        observer = cursors.CursorObserver(history, SequentialIds("p"))
        observer.watch("a", URLS, "persistent://public/default/t")
        observer.start()
        assert five.wait(10)
        observer.finish()
    assert asked[:5] == [*URLS, *URLS[:2]]


def test_a_cursor_whose_position_is_not_stored_is_not_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Apache Pulsar shows its owner's position in memory; outside the cursor state `Open`
    nothing writes it, so a reading then could confirm acknowledgements a new owner never
    finds. A cursor that reports no state (our reference brokers') is read as before."""
    answers = {
        "/stats": {"subscriptions": {name: {"msgBacklog": 0, "consumers": []}
                                     for name in ("cut", "stored", "reference")}},
        "/internalStats": {"cursors": {
            "cut": {"markDeletePosition": "8:523", "state": "NoLedger"},
            "stored": {"markDeletePosition": "8:100", "state": "Open"},
            "reference": {"markDeletePosition": "3:7"}}},
    }

    def first_answer(admin_urls: Sequence[str], path: str, kind: type) -> object:
        return next(answer for suffix, answer in answers.items() if path.endswith(suffix))

    monkeypatch.setattr(cursors, "first_answer", first_answer)
    readings = cursors.read_cursors(URLS, "persistent://public/default/t")
    assert readings is not None and sorted(readings) == ["reference", "stored"]
