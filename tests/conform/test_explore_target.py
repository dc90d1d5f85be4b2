"""`starquake explore --target` against our reference implementation started on its own
(`starquake serve`, local processes) as a third party's system would be: each seed's
scenario is drawn within what the served target offers (its one cluster and nodes, the
kill and pause its hooks give, no partition), run as an ordinary run aimed at it and
judged; on correct code both runs are valid, and the served cluster outlives them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness.targets.external.file import load_target_file
from nemesis.faults import FAULTS
from scenarios.format import load_scenario
from tests.conform.helpers import REPO, explain

pytestmark = [pytest.mark.cluster, pytest.mark.spark, pytest.mark.slow]


def test_two_seeds_drawn_within_a_served_target_run_valid_and_leave_it_running(
        served: Path, tmp_path: Path) -> None:
    top = tmp_path / "explore"
    done = subprocess.run([sys.executable, "-m", "starquake", "explore", "--target",
                           str(served), "--seeds", "2", "--runs-dir", str(top)],
                          cwd=REPO, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, explain(done)
    assert "node controls kill, pause" in done.stdout
    (cluster,) = load_target_file(served).clusters
    for seed in (1, 2):
        scenario = load_scenario(top / "scenarios" / f"explore-{seed}.toml")
        assert scenario.topology.clusters == (cluster.name,)
        assert scenario.topology.brokers == len(cluster.service_urls)
        assert scenario.mutants == ()
        assert all(not FAULTS[fault].needs & {"partition", "cut-clients", "session-debug"}
                   for fault in scenario.nemesis.faults)
        (run_dir,) = (top / scenario.name).iterdir()
        assert json.loads((run_dir / "results.json").read_text())["valid"] is True
        command = (run_dir / "command.txt").read_text()
        assert f"explore --target {served} --seed {seed}" in command
    assert (top / "index.html").is_file() and (top / "junit.xml").is_file()
    again = subprocess.run([sys.executable, "-m", "starquake", "explore", "--target",
                            str(served), "--seed", "1", "--budget", "0", "--runs-dir",
                            str(tmp_path / "again")],
                           cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert again.returncode == 0, explain(again)  # still reachable; nothing run, nothing lost
    assert (tmp_path / "again" / "scenarios" / "explore-1.toml").read_text() == (
        top / "scenarios" / "explore-1.toml").read_text()
