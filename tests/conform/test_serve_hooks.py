"""Our reference implementation started on its own (`starquake serve`) and validated as a
third party's system through the target file it writes, whose shell hooks signal its
processes; the same cluster with no fault control; and a mutant caught by the feature that
should catch it while the others pass."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conform.helpers import conform, explain, serve, statuses

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]


def test_hooks_on_served_processes_pass_every_feature_they_can_take(
        served: Path, tmp_path: Path) -> None:
    done, document = conform(served, tmp_path, "--features",
                             "client-contract,durability-kill,durability-storage-kill,"
                             "durability-pause,durability-partition,metadata-loss-shutdown,"
                             "geo-replication")
    assert done.returncode == 0, explain(done)
    assert statuses(document) == {
        "client-contract": "pass", "durability-kill": "pass", "durability-storage-kill": "pass",
        "durability-pause": "pass", "durability-partition": "skipped",
        "metadata-loss-shutdown": "unsupported", "geo-replication": "unsupported"}
    reasons = {row["feature"]: row["reason"] for row in document["features"]}
    assert "partition" in reasons["durability-partition"]
    assert "metadata_loss_shutdown_s" in reasons["metadata-loss-shutdown"]
    assert "cluster" in reasons["geo-replication"]
    directory = next(tmp_path.glob("conform/*/*"))
    for name in ("conformance.html", "junit.xml", "target.toml"):
        assert (directory / name).is_file()
    junit = (directory / "junit.xml").read_text()
    assert junit.count("<skipped") == 3 and "<failure" not in junit
    assert re.search(r"durability-kill\s.*pass", done.stdout)
    kill_run = next(row for row in document["features"] if row["feature"] == "durability-kill")
    history = (directory / kill_run["run"] / "history.jsonl").read_text()
    assert '"f":"kill"' in history and '"f":"start"' in history  # the hooks acted


def test_without_fault_control_the_fault_rows_are_skipped(served: Path,
                                                         tmp_path: Path) -> None:
    text = served.read_text()
    no_control = tmp_path / "no-control.toml"
    no_control.write_text(text.split("[hooks]")[0] + "[[clusters]]"
                          + text.split("[[clusters]]", 1)[1].replace('control = "hooks"',
                                                                    'control = "none"'))
    done, document = conform(no_control, tmp_path / "runs", "--features",
                             "durability-kill,durability-pause,scalable-topics")
    assert done.returncode == 0, explain(done)
    assert statuses(document) == {"durability-kill": "skipped", "durability-pause": "skipped",
                                  "scalable-topics": "pass"}


def test_each_mutant_fails_the_feature_that_should_catch_it(tmp_path: Path) -> None:
    """Three mutants in one served cluster (one cluster start for all): children's cursors
    at Latest lose what a child took before its consumer came; receipts naming the
    producer's newest entry put two values at one position once sends are pipelined; a
    bookie that answers before its write is durable loses it when killed."""
    for target in serve(tmp_path, "--mutants", "child-cursor-at-latest,"
                         "receipt-names-latest-write,ack-before-durable"):
        done, document = conform(target, tmp_path / "runs", "--features",
                                 "durability-kill,durability-storage-kill,scalable-topics")
        assert done.returncode == 1, explain(done)
        assert statuses(document) == dict.fromkeys(
            ("durability-kill", "durability-storage-kill", "scalable-topics"), "fail")
        rows = {row["feature"]: row for row in document["features"]}
        assert rows["scalable-topics"]["anomalies"].get("lost", 0) > 0
        assert rows["durability-kill"]["anomalies"].get("forked-position", 0) > 0
        assert rows["durability-storage-kill"]["anomalies"].get("lost", 0) > 0
        assert all(row["report"].endswith("report.html") for row in rows.values())
