"""`starquake run` with the `geo` workload on two clusters of local processes: under the
`update-past-mark-delete` mutant a replicated subscription that fails over loses messages
in the live subscription, and the verdict says so; with `markers-dispatched` the consumers
receive the snapshot markers as messages nobody sent. (Valid geo and migration runs, in
containers, are in test_smoke_suite.py.)"""

from __future__ import annotations

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
