"""`starquake run` with the `geo` workload on two clusters of local processes: a run whose
replicated subscription fails over between them while producers write in both is valid,
every message reaching both clusters; the same run with the
`update-past-mark-delete` mutant loses messages in the live subscription after a
failover, and the verdict says so; with `markers-dispatched` the consumers receive the
snapshot markers as messages nobody sent. A tenant migrated a -> b by document 003's five steps
under load, its clients going through the lookup service, is valid too."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
STARQUAKE = [sys.executable, "-m", "starquake"]

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]


def _run(scenario: str | Path, runs: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    """Run `scenario` (a path, or a name under tests/run/scenarios) with seed 1."""
    path = HERE / "scenarios" / scenario if isinstance(scenario, str) else scenario
    done = subprocess.run([*STARQUAKE, "run", str(path), "--seed", "1",
                           "--backend", "local", "--runs-dir", str(runs)],
                          cwd=REPO, capture_output=True, text=True, timeout=400, check=False)
    (run_dir,) = (runs / path.stem).iterdir()
    return done, run_dir


def _events(run_dir: Path) -> list[dict]:
    return [orjson.loads(line) for line in (run_dir / "history.jsonl").read_bytes().splitlines()]


def test_a_geo_run_with_failovers_is_valid(tmp_path: Path) -> None:
    done, run_dir = _run("geo-failover-local.toml", tmp_path / "runs")
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((run_dir / "results.json").read_text())
    assert results["valid"] is True
    events = _events(run_dir)

    failovers = [json.loads(e["detail"]) for e in events
                 if e["f"] == "failover" and e["type"] == "ok"]
    # The consumers moved a -> b -> a ..., each failover starting where the last ended.
    assert len(failovers) >= 2 and failovers[0] == {"from": "a", "to": "b"}
    assert all(earlier["to"] == later["from"] != later["to"]
               for earlier, later in itertools.pairwise(failovers))
    sent = {e["value"]: e["cluster"] for e in events if e["f"] == "send" and e["type"] == "ok"}
    assert set(sent.values()) == {"a", "b"} and len(sent) > 300
    received: dict[str, set[str]] = {}
    for e in events:
        if e["f"] == "recv":
            received.setdefault(e["subscription"], set()).add(e["value"])
    # Every message reached both clusters, and the live subscription was read in both.
    assert received["late-a"] >= set(sent) and received["late-b"] >= set(sent)
    assert {e["cluster"] for e in events if e["f"] == "recv" and e["subscription"] == "live"
            } == {"a", "b"}
    assert {"a-broker1.log", "b-broker1.log", "client-a.log", "client-b.log"} <= {
        p.name for p in (run_dir / "logs").iterdir()}


def test_a_subscription_moved_past_its_acknowledgements_loses_messages(tmp_path: Path) -> None:
    done, run_dir = _run("geo-update-past-mark-delete.toml", tmp_path / "runs")
    assert done.returncode == 1, done.stdout + done.stderr
    lost = json.loads((run_dir / "results.json").read_text())["checkers"]["lost"]
    assert lost["valid"] is False and lost["count"] > 0
    assert {example["subscription"] for example in lost["examples"]} == {"live"}


def test_snapshot_markers_handed_to_consumers_are_messages_nobody_sent(
        tmp_path: Path) -> None:
    """`markers-dispatched`: the snapshot rounds' markers, written into the topic for the
    brokers, reach the consumers: `unexpected`, every such delivery a marker's protobuf
    payload (field 1's tag first) and no producer's value, while nothing is lost."""
    done, run_dir = _run(REPO / "scenarios/mutants/geo-markers-dispatched.toml",
                         tmp_path / "runs")
    assert done.returncode == 1, done.stdout + done.stderr
    checkers = json.loads((run_dir / "results.json").read_text())["checkers"]
    assert checkers["unexpected"]["count"] > 0 and checkers["lost"]["valid"] is True
    events = _events(run_dir)
    sent = {e["value"] for e in events if e["f"] == "send"}
    nobody_sent = [e["value"] for e in events if e["f"] == "recv" and e["value"] not in sent]
    assert nobody_sent and all(value.startswith("\n") for value in nobody_sent)
    assert {example["value"] for example in checkers["unexpected"]["examples"]} <= set(
        nobody_sent)


def test_a_tenant_migration_under_load_is_valid(tmp_path: Path) -> None:
    done, run_dir = _run("migration-local.toml", tmp_path / "runs")
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((run_dir / "results.json").read_text())["valid"] is True
    events = _events(run_dir)
    steps = [(e["value"], e["type"]) for e in events if e["f"] == "migrate"]
    assert steps == [(step, kind) for step in ("metadata", "data", "consumption progress",
                                               "switch", "clean up")
                     for kind in ("invoke", "ok")]
    # The clients went on writing and reading after the switch (the source's tenant is
    # deleted by then), and the tenant's lookups went through the lookup service.
    switched = next(e["index"] for e in events if e["f"] == "migrate" and e["type"] == "ok"
                    and e["value"] == "switch")
    assert any(e["f"] == "send" and e["type"] == "ok" for e in events[switched:])
    assert any(e["f"] == "recv" for e in events[switched:])
    assert (run_dir / "logs" / "lookup.log").is_file()
