"""`starquake bench workload` reads its figures from the run's history: operations that
ended while the producers ran, the send latency, the fault intervals that saw operations,
and which of the offered rate, the cluster's latency or the harness held the rate down."""

from __future__ import annotations

import json
from pathlib import Path

from history.writer import ClientProcess, HistoryWriter, SequentialIds
from starquake.bench.workload import measure

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
