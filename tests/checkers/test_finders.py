"""Checkers that share a finder: one pass decides them all, and each checker asked alone
still gets only its own anomalies (what a phase profile of the check relies on)."""

from __future__ import annotations

import json

import pytest

from checkers.anomaly import CheckSettings
from checkers.frames import HistoryFrames
from checkers.load import prepare
from checkers.registry import registered
from tests.checkers.builder import History


@pytest.mark.spark
def test_a_shared_finder_answers_each_checker_alone(spark, tmp_path) -> None:
    history = History(tmp_path / "history.jsonl")
    history.subscribe("s", "exclusive")
    history.send("m1", position="1:0")
    history.send("m2", position="1:1")  # never delivered: lost
    history.send("m3", outcome="fail")
    history.recv("m1", position="1:0")
    history.ack("m1")
    history.recv("m1", position="1:0")  # after its ack: duplicate
    history.recv("m3", position="1:2")  # its send failed: failed-delivered
    history.recv("ghost")  # never sent: unexpected
    history.drain()
    frames = HistoryFrames.load(spark, {"run": prepare(history.close())})

    by_name = {c.name: c for c in registered()}
    shared = {"lost", "unexpected", "failed-delivered", "duplicate"}
    assert len({by_name[name].finder for name in shared}) == 1
    found = {}
    for name in shared:
        rows = by_name[name].find(frames, CheckSettings()).collect()
        assert {row["checker"] for row in rows} == {name}
        (row,) = rows
        found[name] = json.loads(row["example"])["value"]
    assert found == {"lost": "m2", "unexpected": "ghost", "failed-delivered": "m3",
                     "duplicate": "m1"}
