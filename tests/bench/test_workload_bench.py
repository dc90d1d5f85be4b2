"""`starquake bench workload` reads its figures from the run's history: operations that
ended while the producers ran, the send latency, the fault intervals that saw operations,
and which of the offered rate, the cluster's latency or the harness held the rate down."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from history.writer import ClientProcess, HistoryWriter, SequentialIds
from scenarios.format import Scenario
from starquake.bench import workload
from starquake.bench.workload import WorkloadBench, measure

MS = 1_000_000


def _run_dir(tmp_path: Path, send_ms: float) -> Path:
    """Ten sends 100 ms apart, each taking `send_ms`, delivered and acknowledged; a
    subscribe before them and a late `recv` after the last send, which do not count."""
    now = [0.0]
    writer = HistoryWriter(tmp_path / "history.jsonl", clock=lambda: int(now[0] * MS))
    ids = SequentialIds("p")
    consumer = ClientProcess(writer, ids)
    consumer.invoke("subscribe", value="live")
    consumer.complete("ok", value="live")
    producer = ClientProcess(writer, ids)
    for n in range(10):
        now[0] = 100.0 + 100 * n
        producer.invoke("send", value=f"m{n}")
        now[0] += send_ms
        producer.complete("ok", value=f"m{n}", position=f"1:{n}")
        consumer.observe("recv", value=f"m{n}")
        consumer.invoke("ack", value=f"m{n}")
        consumer.complete("ok", value=f"m{n}")
    now[0] += 500
    consumer.observe("recv", value="m9")
    writer.close()
    (tmp_path / "results.json").write_text(json.dumps({"stats": {"nemesis": [
        {"f": "pause", "start_ms": 150, "end_ms": 350, "operations": {"ok": 4}},
        {"f": "kill", "start_ms": 550, "end_ms": 650, "operations": {}},
        {"f": "expire-session", "start_ms": 800, "end_ms": 800, "operations": {}}]}}))
    return tmp_path


def test_operations_are_counted_while_the_producers_ran(tmp_path: Path) -> None:
    figures = measure(_run_dir(tmp_path, send_ms=5), offered_sends_per_s=10, processes=1)
    assert figures.seconds == 0.905  # first invoke at 100 ms, last ok at 1005 ms
    # 10 sends, 10 recvs and 10 acks; the subscribe before and the recv after are out
    assert figures.operations == 30 and figures.sends == 10
    assert figures.send_p50_ms == 5
    # an instantaneous fault has no interval to invoke anything in
    assert (figures.intervals_with_operations, figures.fault_intervals) == (1, 2)
    assert figures.limit().startswith("the offered rate")
    # 7 of the 10 sends were invoked outside the faults (those at 200 and 300 ms in the
    # pause, at 600 ms in the kill), in the 0.905 s less the pause's 0.2 s and the kill's
    # 0.1 s
    assert round(figures.sends_between_faults_per_s, 2) == round(7 / 0.605, 2)


def test_sends_lost_to_the_faults_are_named_as_the_limit(tmp_path: Path) -> None:
    figures = measure(_run_dir(tmp_path, send_ms=5), offered_sends_per_s=12.5, processes=4)
    assert figures.sends_per_second < 0.9 * 12.5 < figures.sends_between_faults_per_s
    assert figures.limit().startswith("the faults")


def test_a_slow_cluster_is_named_as_the_limit(tmp_path: Path) -> None:
    figures = measure(_run_dir(tmp_path, send_ms=80), offered_sends_per_s=500, processes=4)
    assert figures.ceiling_sends_per_s == 50
    assert figures.limit().startswith("the cluster's send latency (p50 80.0 ms)")


def test_a_pulsar_comparison_runs_both_targets_in_the_same_shape(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--target apache-pulsar` runs the bench scenario on the reference and on Pulsar with
    the same topology but for the backend (three bookies, a 10 s session), gives Pulsar the
    drain its scenarios have, and prints Pulsar's rate as a ratio to the reference's."""
    ran: list[Scenario] = []
    figures = measure(_run_dir(tmp_path, send_ms=5), offered_sends_per_s=10, processes=1)

    def bench(scenario: Scenario, seed: int, runs_dir: Path, tmp: Path) -> WorkloadBench:
        ran.append(scenario)
        if scenario.topology.backend == "apache-pulsar":
            return dataclasses.replace(figures, operations=figures.operations // 2)
        return figures

    monkeypatch.setattr(workload, "_bench", bench)
    result = CliRunner().invoke(workload.bench_workload, ["--target", "apache-pulsar"])
    assert result.exit_code == 0, result.output
    reference, pulsar = ran
    assert reference.topology.backend == "docker"
    assert dataclasses.replace(pulsar.topology, backend="docker") == reference.topology
    assert (reference.topology.bookies, reference.topology.session_timeout_ms) == (3, 10_000)
    assert pulsar.workload.drain_timeout_s == workload.PULSAR_DRAIN_S
    assert dataclasses.replace(pulsar.workload, drain_timeout_s=60.0) == reference.workload
    assert "ratio apache-pulsar/reference=0.50" in result.output
