"""Runs of the `geo` workload on two clusters of local processes, from the short mutants
suite (tests/run/conftest.py): with `markers-dispatched` the consumers receive the
snapshot markers as messages nobody sent. (Valid geo and migration runs, in
containers, are in test_smoke_suite.py.)"""

from __future__ import annotations

import json

import pytest

from tests.run.suite_runs import SuiteRuns
from tests.run.test_run_local import _events

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]


def test_snapshot_markers_handed_to_consumers_are_messages_nobody_sent(
        mutants_suite: SuiteRuns) -> None:
    """`markers-dispatched`: the snapshot rounds' markers, written into the topic for the
    brokers, reach the consumers: `unexpected`, every such delivery a marker's protobuf
    payload (field 1's tag first) and no producer's value, while nothing is lost."""
    run_dir = mutants_suite.run("geo-markers-dispatched")
    checkers = json.loads((run_dir / "results.json").read_text())["checkers"]
    assert checkers["unexpected"]["count"] > 0 and checkers["lost"]["valid"] is True
    events = _events(run_dir)
    sent = {e["value"] for e in events if e["f"] == "send"}
    nobody_sent = [e["value"] for e in events if e["f"] == "recv" and e["value"] not in sent]
    assert nobody_sent and all(value.startswith("\n") for value in nobody_sent)
    assert {example["value"] for example in checkers["unexpected"]["examples"]} <= set(
        nobody_sent)
