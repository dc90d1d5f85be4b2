"""The `contract` workload against a real local cluster of our brokers, judged by the
checkers: every probe our broker supports passes, and a broken expectation is caught,
named by its probe."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulsar
import pytest
from pyspark.sql import SparkSession

from harness.targets.local.cluster import ClusterSettings, LocalCluster
from harness.workloads.contract import readers
from harness.workloads.contract.workload import BESIDE, GROUPS
from tests.run.contract_run import judged, probe_outcomes, run_contract

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]

PROBES = {probe for spec in GROUPS + BESIDE for probe in spec.probes}
READER_AND_SEEK = {"reader-earliest", "reader-message-id", "reader-message-id-inclusive",
                   "reader-has-message-available", "seek-message-id", "seek-timestamp",
                   "seek-shared-starts-over"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path_factory.mktemp("cluster"), ClusterSettings(brokers=3)) as started:
        yield started


def _run(cluster: LocalCluster, directory: Path) -> tuple[Path, float]:
    return run_contract(directory, cluster.service_urls, cluster.admin_urls)


def _judged(spark: SparkSession, path: Path) -> dict[str, Any]:
    return judged(spark, {"run": path})["run"]


def test_every_probe_passes_on_our_broker(cluster: LocalCluster, spark: SparkSession,
                                          tmp_path: Path) -> None:
    path, took = _run(cluster, tmp_path)
    assert took < 45, f"the probes took {took:.0f} s"
    probes = probe_outcomes(path)
    assert set(probes) == PROBES
    assert set(probes.values()) == {"ok"}, probes
    results = _judged(spark, path)
    assert results["valid"] is True, results["checkers"]
    assert results["stats"]["sends_ok"] > 400 and results["stats"]["recvs"] > 400


def test_a_broker_that_ignores_seek_and_start_positions_is_caught(
        cluster: LocalCluster, spark: SparkSession, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What our broker did before it had SEEK and readers' start positions, played by
    the client: a seek that rewinds nothing, every reader starting at the latest."""
    create_reader = pulsar.Client.create_reader
    monkeypatch.setattr(pulsar.Consumer, "seek", lambda self, to: None)
    monkeypatch.setattr(pulsar.Client, "create_reader",
                        lambda self, topic, start, **options: create_reader(
                            self, topic, pulsar.MessageId.latest, **options))
    path, _ = run_contract(tmp_path, cluster.service_urls, cluster.admin_urls,
                           readers.GROUPS, ())
    results = _judged(spark, path)
    contract = results["checkers"]["contract"]
    assert contract["valid"] is False
    assert {e["probe"] for e in contract["examples"]} == READER_AND_SEEK
    assert contract["count"] == len(READER_AND_SEEK)
    assert results["valid"] is False
    others = {name: c["valid"] for name, c in results["checkers"].items() if name != "contract"}
    assert set(others.values()) == {True}, others
    assert probe_outcomes(path)["reader-latest"] == "ok"  # a reader from the latest still is right
