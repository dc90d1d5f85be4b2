"""Runs of the `geo` workload on two clusters of local processes, from the short mutants
suite (tests/run/conftest.py): with `markers-dispatched` the consumers receive the
snapshot markers as messages nobody sent; and, in a suite of its own, with
`snapshot-never-times-out`, under `unlink-replication` and a killed owner, a failover
repeats far more than a snapshot interval. (Valid geo and migration runs, in
containers, are in test_smoke_suite.py.)"""

from __future__ import annotations

import json

import pytest

from tests.run.suite_runs import REPO, SuiteRuns
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


@pytest.fixture(scope="module")
def unanswered_snapshot(tmp_path_factory: pytest.TempPathFactory) -> SuiteRuns:
    """`geo-snapshot-never-times-out` in a suite of its own, so that the short mutants suite
    stays as short as it was."""
    return SuiteRuns(tmp_path_factory.mktemp("unanswered") / "runs",
                     str(REPO / "scenarios/mutants/geo-snapshot-never-times-out.toml"),
                     timeout_s=500)


def test_a_first_snapshot_never_answered_and_never_abandoned_stops_the_updates(
        unanswered_snapshot: SuiteRuns) -> None:
    """`snapshot-never-times-out`: b stops replicating to a, and the broker of a that owns
    the workload's topic (the geo namespace's, not the context's) is killed; the new
    controller's first request is answered into the void and kept for ever, so the
    failover a -> b, judged (past the allowance after the relink), repeats over 10 s of
    acknowledged messages; nothing is lost."""
    run_dir = unanswered_snapshot.run("geo-snapshot-never-times-out")
    checkers = json.loads((run_dir / "results.json").read_text())["checkers"]
    assert checkers["lost"]["valid"] is True and checkers["duplicate-window"]["count"] == 1
    (failover,) = checkers["duplicate-window"]["examples"]
    assert (failover["from"], failover["to"]) == ("a", "b") and failover["window_ms"] > 10_000
    nemesis = [e for e in _events(run_dir) if e["process"] == "nemesis" and e["type"] == "ok"]
    assert [e["f"] for e in nemesis] == ["unlink-replication", "kill", "start",
                                         "relink-replication", "heal"]
    assert json.loads(nemesis[0]["detail"])["replication_clusters"] == {"b": ["b"]}
    killed = json.loads(nemesis[1]["detail"])["targets"][0]
    assert "loaded topic persistent://starquake/geo/" in (
        run_dir / "logs" / f"{killed}.log").read_text()
