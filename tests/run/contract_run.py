"""One run of the `contract` workload, or of some of its groups, against any broker, and
its judgement by the checkers: what the contract tests share."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from checkers.anomaly import CheckSettings
from checkers.check import check_runs
from checkers.load import prepare
from harness.workloads.base import WorkloadContext
from harness.workloads.contract.clients import GroupSpec
from harness.workloads.contract.workload import BESIDE, GROUPS, ContractWorkload
from harness.workloads.settings import WorkloadSettings
from history.writer import HistoryWriter

RUN_BOUND_S = 90.0


def run_contract(directory: Path, service_urls: Sequence[str], admin_urls: Sequence[str],
                 groups: tuple[GroupSpec, ...] = GROUPS,
                 beside: tuple[GroupSpec, ...] = BESIDE) -> tuple[Path, float]:
    """One run of `groups` (and `beside`): the history and how long the probes took."""
    directory.mkdir(parents=True, exist_ok=True)
    history = HistoryWriter(directory / "history.jsonl")
    workload = ContractWorkload(WorkloadContext(
        history=history, settings=WorkloadSettings(kind="contract"), seed=1, cluster="a",
        service_url="pulsar://" + ",".join(url.removeprefix("pulsar://")
                                           for url in service_urls),
        admin_urls=tuple(admin_urls), topic="persistent://public/default/contract",
        client_log=directory / "client.log"), groups, beside)
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


def judged(spark: SparkSession, paths: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """Each run's results, all checked in one Spark job."""
    prepared = {name: prepare(path) for name, path in paths.items()}
    return {r.run: r.results for r in check_runs(spark, prepared, CheckSettings())}


def probe_outcomes(path: Path) -> dict[str, str]:
    """Each probe's completion type."""
    events = [json.loads(line) for line in path.read_text().splitlines()]
    return {e["value"]: e["type"] for e in events if e["f"] == "probe" and e["type"] != "invoke"}
