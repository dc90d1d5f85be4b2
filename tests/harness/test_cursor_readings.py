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
