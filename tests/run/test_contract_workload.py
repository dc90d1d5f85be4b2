"""The `contract` workload against a real local cluster of our brokers, judged by the
checkers: every probe our broker supports passes, and a broken expectation is caught,
named by its probe."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulsar
import pytest
from pyspark.sql import SparkSession

from checkers.anomaly import CheckSettings
from checkers.check import check_runs
from checkers.load import prepare
from harness.targets.local.cluster import ClusterSettings, LocalCluster
from harness.workloads import make_workload
from harness.workloads.base import WorkloadContext
from harness.workloads.settings import WorkloadSettings
from history.writer import HistoryWriter

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]

RUN_BOUND_S = 60.0
READER_AND_SEEK = {"reader-earliest", "reader-message-id", "seek-message-id",
                   "seek-timestamp"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path_factory.mktemp("cluster"), ClusterSettings(brokers=3)) as started:
        yield started


def _run(cluster: LocalCluster, directory: Path) -> tuple[Path, float]:
    """One whole run of the workload: the history and how long the probes took."""
    history = HistoryWriter(directory / "history.jsonl")
    workload = make_workload(WorkloadContext(
        history=history, settings=WorkloadSettings(kind="contract"), seed=1, cluster="a",
        service_url="pulsar://" + ",".join(url.removeprefix("pulsar://")
                                           for url in cluster.service_urls),
        admin_urls=tuple(cluster.admin_urls), topic="persistent://public/default/contract",
        client_log=directory / "client.log"))
    started = time.monotonic()
    try:
        workload.open()
        workload.run(started + RUN_BOUND_S, threading.Event())
        took = time.monotonic() - started
        workload.drain()
    finally:
        workload.close()
        history.close()
    return history.path, took


def _judged(spark: SparkSession, path: Path) -> dict[str, Any]:
    (result,) = check_runs(spark, {"run": prepare(path)}, CheckSettings())
    return result.results


def _probes(path: Path) -> dict[str, str]:
    """Each probe's completion type."""
    events = [json.loads(line) for line in path.read_text().splitlines()]
    return {e["value"]: e["type"] for e in events if e["f"] == "probe" and e["type"] != "invoke"}


def test_every_probe_passes_on_our_broker(cluster: LocalCluster, spark: SparkSession,
                                          tmp_path: Path) -> None:
    path, took = _run(cluster, tmp_path)
    assert took < 45, f"the probes took {took:.0f} s"
    probes = _probes(path)
    assert len(probes) == 15
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
    path, _ = _run(cluster, tmp_path)
    results = _judged(spark, path)
    contract = results["checkers"]["contract"]
    assert contract["valid"] is False
    assert {e["probe"] for e in contract["examples"]} == READER_AND_SEEK
    assert contract["count"] == len(READER_AND_SEEK)
    assert results["valid"] is False
    others = {name: c["valid"] for name, c in results["checkers"].items() if name != "contract"}
    assert set(others.values()) == {True}, others
    assert _probes(path)["reader-latest"] == "ok"  # a reader from the latest still is right
